import * as v from 'valibot';
import { exactInteger, MAX_EXACT_INTEGER } from '#lib/number-fields.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { optionalField, parseInput, requiredField, requiredText } from '#lib/validation.ts';
import { actionProblems, type ShapedAction } from './action-checks.ts';
import { conditionProblems } from './condition-checks.ts';
import type { RuleReferences } from './references.ts';
import {
  ACTION_TYPES,
  type Action,
  CONDITION_OPS,
  type Condition,
  type Macro,
  RULE_KINDS,
  RULE_LIMITS,
  type Rule,
  TIME_SINCE,
} from './types.ts';
import type { Problem } from './value-checks.ts';
import { actionsWire, conditionsWire, timeWire } from './wire.ts';

/**
 * The bodies of rules and macros (decisions.md, "Business rules"), with Laravel's messages and the request's own
 * paths (lib/validation.ts): the shapes here, then what only the catalogue and the account can say
 * (condition-checks.ts, action-checks.ts), each on its exact path (`conditions.all.0.value`, `actions.2.body`).
 */

export const MAX_RULE_NAME = 255;

const conditionShape = v.object({
  field: requiredField('field', v.string('The field field must be a string.')),
  op: requiredField('op', v.picklist(CONDITION_OPS, 'The selected op is invalid.')),
  value: v.optional(v.unknown()),
});

const group = (name: string) =>
  v.optional(
    v.pipe(
      v.unknown(),
      v.transform((x) => x ?? []),
      v.array(v.unknown(), `The conditions.${name} field must be an array.`),
      v.array(conditionShape),
    ),
    [],
  );

const conditions = v.optional(
  v.pipe(
    v.unknown(),
    wire(conditionsWire),
    v.transform((x) => x ?? {}),
    v.object({ all: group('all'), any: group('any') }, 'The conditions field must be an object.'),
  ),
  {},
);

const actionShape = v.object({
  type: requiredField('type', v.picklist(ACTION_TYPES, 'The selected type is invalid.')),
  field: v.optional(v.unknown()),
  value: v.optional(v.unknown()),
  tags: v.optional(v.unknown()),
  body: v.optional(v.unknown()),
  agent_id: v.optional(v.unknown()),
});

const actions = requiredField(
  'actions',
  v.pipe(
    v.array(v.unknown(), 'The actions field must be an array.'),
    v.minLength(1, 'The actions field is required.'),
    v.maxLength(
      RULE_LIMITS.actions,
      `The actions field must not have more than ${RULE_LIMITS.actions} items.`,
    ),
    v.array(actionShape),
  ),
  actionsWire,
);

const time = optionalField(
  v.object(
    {
      after_minutes: requiredField(
        'after_minutes',
        v.pipe(
          v.number('The after minutes field must be an integer.'),
          v.integer('The after minutes field must be an integer.'),
          v.minValue(1, `The after minutes field must be between 1 and ${RULE_LIMITS.afterMinutes}.`),
          v.maxValue(
            RULE_LIMITS.afterMinutes,
            `The after minutes field must be between 1 and ${RULE_LIMITS.afterMinutes}.`,
          ),
        ),
      ),
      since: requiredField('since', v.picklist(TIME_SINCE, 'The selected since is invalid.')),
      business_hours: optionalField(v.boolean('The business hours field must be true or false.')),
    },
    'The time field must be an object.',
  ),
  timeWire,
);

const RuleShape = v.object({
  name: requiredText('name', MAX_RULE_NAME),
  active: optionalField(v.boolean('The active field must be true or false.')),
  position: optionalField(
    v.pipe(
      v.number('The position field must be an integer.'),
      v.integer('The position field must be an integer.'),
      v.minValue(0, 'The position field must be at least 0.'),
      v.maxValue(MAX_EXACT_INTEGER, `The position field must not be greater than ${MAX_EXACT_INTEGER}.`),
    ),
    v.pipe(exactInteger, v.minValue(0)),
  ),
  on: requiredField('on', v.picklist(RULE_KINDS, 'The selected on is invalid.')),
  conditions,
  actions,
  time,
});
type ShapedRule = v.InferOutput<typeof RuleShape>;

/** A rule's body and a PATCH's, as the OpenAPI document shows them (the checks that need the account are words). */
export const CreateRuleSchema = RuleShape;
export const UpdateRuleSchema = v.partial(RuleShape);

/** Problems as valibot issues on their paths (fieldPath reads each step's key). */
function report(
  problems: Problem[],
  input: unknown,
  addIssue: (issue: { message: string; path: [v.ObjectPathItem] }) => void,
) {
  for (const problem of problems) {
    const path = problem.path.map((key) => ({
      type: 'object',
      origin: 'value',
      input,
      key,
      value: undefined,
    }));
    addIssue({ message: problem.message, path: path as unknown as [v.ObjectPathItem] });
  }
}

function ruleProblems(rule: ShapedRule, refs: RuleReferences): Problem[] {
  const problems: Problem[] = [];
  if (rule.on === 'time' && rule.time === undefined) {
    problems.push({ path: ['time'], message: 'The time field is required when on is time.' });
  }
  if (rule.on !== 'time' && rule.time !== undefined) {
    problems.push({ path: ['time'], message: 'The time field is prohibited unless on is time.' });
  }
  if (rule.active !== false && refs.otherActiveRules + 1 > RULE_LIMITS.activeRules) {
    problems.push({
      path: ['active'],
      message: `The account already has ${RULE_LIMITS.activeRules} active rules: deactivate one first.`,
    });
  }
  return [
    ...problems,
    ...conditionProblems(rule.conditions, rule.on, refs),
    ...actionProblems(rule.actions, refs),
  ];
}

/** A rule as a create sends it (`position` absent: the caller puts it last). */
export type RuleInput = Omit<Rule, 'id' | 'version' | 'createdAt' | 'updatedAt' | 'position'> & {
  position: number | undefined;
};

/** The rule schema for an account: its references name the teams, agents, categories and organizations known. */
export function ruleSchema(refs: RuleReferences) {
  return v.pipe(
    RuleShape,
    v.rawCheck(({ dataset, addIssue }) => {
      if (dataset.typed) report(ruleProblems(dataset.value, refs), dataset.value, addIssue);
    }),
    v.transform(
      (rule): RuleInput => ({
        name: rule.name,
        active: rule.active ?? true,
        position: rule.position,
        on: rule.on,
        conditions: { all: rule.conditions.all.map(toCondition), any: rule.conditions.any.map(toCondition) },
        actions: rule.actions.map(toAction),
        time: rule.time
          ? {
              afterMinutes: rule.time.after_minutes,
              since: rule.time.since,
              businessHours: rule.time.business_hours ?? false,
            }
          : null,
      }),
    ),
  );
}

const MacroShape = v.object({ name: requiredText('name', MAX_RULE_NAME), actions });
export type MacroInput = Pick<Macro, 'name' | 'actions'>;
export const CreateMacroSchema = MacroShape;
export const UpdateMacroSchema = v.partial(MacroShape);

export function macroSchema(refs: RuleReferences) {
  return v.pipe(
    MacroShape,
    v.rawCheck(({ dataset, addIssue }) => {
      if (dataset.typed) report(actionProblems(dataset.value.actions, refs), dataset.value, addIssue);
    }),
    v.transform((macro): MacroInput => ({ name: macro.name, actions: macro.actions.map(toAction) })),
  );
}

/** A rule's body read, or a 422 naming every problem's path (lib/validation.ts, parseInput). */
export const parseRule = (body: unknown, refs: RuleReferences): RuleInput =>
  parseInput(ruleSchema(refs), body);
export const parseMacro = (body: unknown, refs: RuleReferences): MacroInput =>
  parseInput(macroSchema(refs), body);

function toCondition(shaped: { field: string; op: Condition['op']; value?: unknown }): Condition {
  const { field, op, value } = shaped;
  return value === undefined || (value === null && ['present', 'absent', 'changed'].includes(op))
    ? { field, op }
    : { field, op, value: value as Condition['value'] };
}

function toAction(shaped: ShapedAction): Action {
  switch (shaped.type) {
    case 'set':
      return {
        type: 'set',
        field: shaped.field as string,
        value: (shaped.value ?? null) as Extract<Action, { type: 'set' }>['value'],
      };
    case 'add_tags':
    case 'remove_tags':
      return { type: shaped.type, tags: [...new Set((shaped.tags as string[]).map((t) => t.trim()))] };
    default:
      return {
        type: shaped.type,
        body: shaped.body as string,
        agentId: (shaped.agent_id as number | null | undefined) ?? null,
      };
  }
}
