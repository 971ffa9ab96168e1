import { ValidationFailed } from '#lib/errors.ts';
import type { PlacedCondition } from './conditions.ts';
import type { WrittenMessage } from './effects.ts';
import type { Evaluation } from './evaluate.ts';
import type { FieldValue } from './fields.ts';
import type { MacroApplication } from './macros.ts';
import type { RuleReferences } from './references.ts';
import { parseRule, type RuleInput } from './schemas.ts';
import type { Action, Condition, FiredCounts, Macro, Rule } from './types.ts';

/**
 * Rules and macros as the API shows them (decisions.md, "Business rules"), a PATCH read against the rule it
 * changes, and the part of `rules/test`'s answer the evaluator decides (`fired`, `not_fired`).
 */

const presentAction = (action: Action) =>
  action.type === 'note' || action.type === 'reply'
    ? { type: action.type, body: action.body, agent_id: action.agentId }
    : action;

/** A rule's body fields as a client sends them: what a PATCH is laid over. */
function ruleBody(rule: Omit<Rule, 'id' | 'version' | 'createdAt' | 'updatedAt'>) {
  return {
    name: rule.name,
    active: rule.active,
    position: rule.position,
    on: rule.on,
    conditions: rule.conditions,
    actions: rule.actions.map(presentAction),
    time: rule.time && {
      after_minutes: rule.time.afterMinutes,
      since: rule.time.since,
      business_hours: rule.time.businessHours,
    },
  };
}

export function presentRule(rule: Rule, fired: FiredCounts) {
  return {
    id: rule.id,
    ...ruleBody(rule),
    version: rule.version,
    created_at: rule.createdAt,
    updated_at: rule.updatedAt,
    fired,
  };
}

export function presentMacro(macro: Macro) {
  return {
    id: macro.id,
    name: macro.name,
    actions: macro.actions.map(presentAction),
    created_at: macro.createdAt,
    updated_at: macro.updatedAt,
  };
}

const PATCHABLE = ['name', 'active', 'position', 'on', 'conditions', 'actions', 'time'] as const;

/**
 * A PATCH of a rule: the fields sent replace the rule's (a list or `conditions` as a whole, `time: null` removes
 * it), and the rule that results is checked as a create is, so a change of `on` is held to the conditions and
 * `time` it then has. A body with none of the fields is a 422 on `body`, as every PATCH's.
 */
export function parseRulePatch(current: Rule, body: unknown, refs: RuleReferences): RuleInput {
  const sent = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {};
  const fields = PATCHABLE.filter((key) => Object.hasOwn(sent, key));
  if (fields.length === 0) {
    throw ValidationFailed.field(
      'body',
      `The request must change at least one field: ${PATCHABLE.slice(0, -1).join(', ')} or ${PATCHABLE.at(-1)}.`,
    );
  }
  const merged: Record<string, unknown> = { ...ruleBody(current) };
  for (const key of fields) merged[key] = (sent as Record<string, unknown>)[key];
  return parseRule(merged, refs);
}

const presentCondition = ({ path, condition }: PlacedCondition) => ({ path, ...(condition as Condition) });

/**
 * `rules/test`'s `fired` and `not_fired` (decisions.md): a fired rule with the conditions that held; one that did
 * not fire with its first failing condition and the ticket's value (`actual`), or with why it did not though its
 * conditions held (`reason`: the cap stopped it, or every action was skipped).
 */
export function presentOutcomes(evaluation: Pick<Evaluation, 'outcomes'>) {
  const fired = [];
  const notFired = [];
  for (const outcome of evaluation.outcomes) {
    const { id, name } = outcome.rule;
    if (outcome.fired) fired.push({ id, name, matched: outcome.matched.map(presentCondition) });
    else if (outcome.reason === 'conditions') {
      const actual: FieldValue = outcome.failed.actual;
      notFired.push({ id, name, failed: [{ ...presentCondition(outcome.failed), actual }] });
    } else notFired.push({ id, name, failed: [], reason: outcome.reason });
  }
  return { fired, not_fired: notFired };
}

/**
 * The notes and replies a change would write, and the mail its replies would send to the requester (none without
 * an address): `rules/test`'s `messages` and `mail`, and a macro's dry run's.
 */
export function presentWritten(messages: readonly WrittenMessage[], requester: string) {
  return {
    messages: messages.map((m) => ({
      rule_id: m.ruleId,
      visibility: m.type === 'reply' ? 'public' : 'internal',
      body: m.body,
      agent_id: m.agentId,
    })),
    mail: messages
      .filter((m) => m.type === 'reply' && requester !== '')
      .map((m) => ({ to: requester, body: m.body })),
  };
}

/**
 * What a macro's dry run shows besides the ticket as it would be (docs/rules.md, "Macros applied"): every field
 * the macro and its rules would change (from the ticket as it is), the notes and replies it would write and the
 * mail they would send, the `updated` rules as `rules/test` shows them, and the macro's actions that would not
 * apply (by index, with why).
 */
export function presentMacroPreview(application: MacroApplication, requester: string) {
  const { rules } = application;
  return {
    changes: application.changes,
    ...presentWritten(application.messages, requester),
    ...presentOutcomes(rules),
    rules_stopped: rules.stopped,
    rules_skipped: rules.skipped,
    skipped: application.skipped,
  };
}
