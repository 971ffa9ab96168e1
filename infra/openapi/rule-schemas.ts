import * as v from 'valibot';
import { RULE_KINDS } from '#lib/rules/types.ts';
import { actionsWire, timeWire } from '#lib/rules/wire.ts';

/**
 * The answers of the rule and macro routes (decisions.md, "Business rules"): a rule and a macro as their GET answers
 * them, and their lists. Re-exported by ./schemas.ts, which builds their events and rules/test's answer.
 */

const timestamp = v.pipe(v.string(), v.isoTimestamp(), v.description('ISO 8601, UTC, microseconds.'));
const id = v.pipe(v.number(), v.integer(), v.minValue(1));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));

const ruleExample = {
  id: 12,
  name: 'Route billing mail',
  active: true,
  position: 1,
  on: 'created' as const,
  conditions: {
    all: [{ field: 'channel', op: 'is', value: 'email' }],
    any: [
      { field: 'subject', op: 'contains', value: 'invoice' },
      { field: 'subject', op: 'contains', value: 'refund' },
    ],
  },
  actions: [
    { type: 'set' as const, field: 'team_id', value: 3 },
    { type: 'add_tags' as const, tags: ['billing'] },
  ],
  time: null,
  version: 1,
  created_at: '2026-12-06T09:15:02.123456Z',
  updated_at: '2026-12-06T09:15:02.123456Z',
  fired: { last_hour: 0, last_day: 0, last_week: 0 },
};

export const Rule = v.pipe(
  v.strictObject({
    id: v.pipe(id, v.description("From the account's sequence: never reused.")),
    name: v.string(),
    active: v.pipe(v.boolean(), v.description('At most 1,000 active rules an account.')),
    position: v.pipe(count, v.description('Rules run by position, ties by id.')),
    on: v.picklist(RULE_KINDS),
    conditions: v.strictObject({
      all: v.array(v.record(v.string(), v.unknown())),
      any: v.array(v.record(v.string(), v.unknown())),
    }),
    actions: actionsWire,
    time: v.pipe(timeWire, v.description('Only and always with `on: time`.')),
    version: v.pipe(id, v.description('1 when made, +1 per change: the number in its ETag.')),
    created_at: timestamp,
    updated_at: timestamp,
    fired: v.pipe(
      v.strictObject({ last_hour: count, last_day: count, last_week: count }),
      v.description('How many times it fired: exact counts.'),
    ),
  }),
  v.title('Rule'),
  v.description('Conditions and actions as a create sends them (CreateRuleRequest), each condition in full.'),
  v.examples([ruleExample]),
);
export const OneRule = v.strictObject({ data: Rule });
export const RulePage = v.pipe(
  v.strictObject({
    data: v.array(Rule),
    next_cursor: v.pipe(
      v.nullable(v.pipe(v.string(), v.regex(/^\d{1,16}\.\d{1,15}$/))),
      v.description(
        "Pass as `after` for the next page: the last rule's `<position>.<id>`; null on the last page.",
      ),
    ),
  }),
  v.title('RulePage'),
);

export const Macro = v.pipe(
  v.strictObject({
    id: v.pipe(id, v.description("From the account's sequence: never reused.")),
    name: v.string(),
    actions: v.pipe(actionsWire, v.description("The same actions as rules'.")),
    created_at: timestamp,
    updated_at: timestamp,
  }),
  v.title('Macro'),
  v.examples([
    {
      id: 4,
      name: 'Ask for the invoice number',
      actions: [
        { type: 'set', field: 'status', value: 'pending' },
        { type: 'reply', body: 'Hello {{requester.name}}, which invoice is it?', agent_id: null },
      ],
      created_at: '2026-12-06T09:15:02.123456Z',
      updated_at: '2026-12-06T09:15:02.123456Z',
    },
  ]),
);
export const OneMacro = v.strictObject({ data: Macro });
export const MacroPage = v.pipe(
  v.strictObject({
    data: v.array(Macro),
    next_cursor: v.pipe(
      v.nullable(v.pipe(v.string(), v.regex(/^\d+$/))),
      v.description("Pass as `after` for the next page: the last macro's id; null on the last page."),
    ),
  }),
  v.title('MacroPage'),
);
