import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '#lib/errors.ts';
import { parseRulePatch, presentRule } from '#lib/rules/present.ts';
import { namedOrganizationIds } from '#lib/rules/references.ts';
import { parseMacro, parseRule } from '#lib/rules/schemas.ts';
import { refs, rule } from '#test/support/rules.ts';

/** What a body's 422 says: its errors by path (ValidationFailed's body), or the rule read when it passes. */
function errorsOf(
  body: unknown,
  otherActiveRules = 0,
  read: (body: unknown, r: ReturnType<typeof refs>) => unknown = parseRule,
): Record<string, string[]> {
  try {
    read(body, refs(otherActiveRules));
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailed);
    return (error as ValidationFailed).errors;
  }
  throw new Error('the body was accepted');
}

const billing = {
  name: 'Billing mail to billing',
  on: 'created',
  conditions: {
    all: [{ field: 'via', op: 'is', value: 'email' }],
    any: [
      { field: 'subject', op: 'contains', value: 'invoice' },
      { field: 'tags', op: 'in', value: ['billing', 'refund'] },
    ],
  },
  actions: [
    { type: 'set', field: 'team_id', value: 1 },
    { type: 'add_tags', tags: [' billing ', 'billing'] },
    {
      type: 'reply',
      body: 'Hi {{ requester.name }}, {{ticket.reference}} is with {{agent.name}}.',
      agent_id: 1,
    },
  ],
};

const condition = (c: Record<string, unknown>, on = 'updated') => ({
  name: 'r',
  on,
  conditions: { all: [c] },
  actions: [{ type: 'add_tags', tags: ['x'] }],
});
const action = (a: Record<string, unknown>) => ({ name: 'r', on: 'created', actions: [a] });

describe('rule bodies', () => {
  it('read into the domain form: defaults, tags trimmed and kept once, agent_id as agentId', () => {
    expect(parseRule(billing, refs())).toEqual({
      name: 'Billing mail to billing',
      active: true,
      position: undefined,
      on: 'created',
      conditions: billing.conditions,
      actions: [
        { type: 'set', field: 'team_id', value: 1 },
        { type: 'add_tags', tags: ['billing'] },
        { type: 'reply', body: billing.actions[2]?.body, agentId: 1 },
      ],
      time: null,
    });
    const timed = parseRule(
      { ...billing, on: 'time', time: { after_minutes: 2880, since: 'waiting_since' }, conditions: {} },
      refs(),
    );
    expect(timed.time).toEqual({ afterMinutes: 2880, since: 'waiting_since', businessHours: false });
    expect(timed.conditions).toEqual({ all: [], any: [] });
  });

  it.each([
    ['an unknown field', { field: 'colour', op: 'is', value: 'red' }, 'conditions.all.0.field'],
    ['an unknown op', { field: 'status', op: 'equals', value: 'open' }, 'conditions.all.0.op'],
    ['an op the field does not take', { field: 'tags', op: 'is', value: 'vip' }, 'conditions.all.0.op'],
    ['an unknown status', { field: 'status', op: 'is', value: 'snoozed' }, 'conditions.all.0.value'],
    ['an unknown team', { field: 'team_id', op: 'is', value: 9 }, 'conditions.all.0.value'],
    ['an unknown agent', { field: 'assignee_id', op: 'is', value: 99 }, 'conditions.all.0.value'],
    ['an unknown organization', { field: 'organization_id', op: 'is', value: 8 }, 'conditions.all.0.value'],
    ['an unknown category', { field: 'category', op: 'is', value: 'sales' }, 'conditions.all.0.value'],
    [
      'a bad item of a list',
      { field: 'priority', op: 'in', value: ['low', 'asap'] },
      'conditions.all.0.value.1',
    ],
    ['no list for in', { field: 'priority', op: 'in', value: 'low' }, 'conditions.all.0.value'],
    ['a value for present', { field: 'subject', op: 'present', value: 'x' }, 'conditions.all.0.value'],
    ['no value for is', { field: 'subject', op: 'is' }, 'conditions.all.0.value'],
    ['a bad custom field key', { field: 'custom_fields.a-b', op: 'present' }, 'conditions.all.0.field'],
    [
      'an object as a custom value',
      { field: 'custom_fields.plan', op: 'is', value: {} },
      'conditions.all.0.value',
    ],
  ])('refuse %s on its exact path', (_, c, path) => {
    expect(Object.keys(errorsOf(condition(c)))).toEqual([path]);
  });

  it('keep the change ops to updated rules and the message fields to message rules', () => {
    expect(errorsOf(condition({ field: 'status', op: 'changed' }, 'created'))).toEqual({
      'conditions.all.0.op': ['The changed op is for updated rules only.'],
    });
    expect(errorsOf(condition({ field: 'message.body', op: 'contains', value: 'x' }))).toEqual({
      'conditions.all.0.field': ['The message.body field is read by message rules only.'],
    });
    expect(() =>
      parseRule(condition({ field: 'message.author', op: 'is', value: 'requester' }, 'message'), refs()),
    ).not.toThrow();
  });

  it('count all and any together against 50 conditions, and refuse a 21st action', () => {
    const c = { field: 'status', op: 'is', value: 'open' };
    const fifty = { all: Array(25).fill(c), any: Array(25).fill(c) };
    const ok = { name: 'r', on: 'updated', conditions: fifty, actions: [{ type: 'add_tags', tags: ['x'] }] };
    expect(() => parseRule(ok, refs())).not.toThrow();
    expect(Object.keys(errorsOf({ ...ok, conditions: { ...fifty, any: Array(26).fill(c) } }))).toEqual([
      'conditions',
    ]);
    expect(
      Object.keys(errorsOf({ ...ok, actions: Array(21).fill({ type: 'add_tags', tags: ['x'] }) })),
    ).toEqual(['actions']);
    expect(Object.keys(errorsOf({ ...ok, actions: [] }))).toEqual(['actions']);
  });

  it('refuse the 1,001st active rule on `active`, and take it inactive', () => {
    expect(() => parseRule(billing, refs(999))).not.toThrow();
    expect(Object.keys(errorsOf(billing, 1000))).toEqual(['active']);
    expect(() => parseRule({ ...billing, active: false }, refs(1000))).not.toThrow();
  });

  it.each([
    ['an unknown placeholder', { type: 'note', body: 'Hi {{ticket.owner}}' }, 'actions.0.body'],
    ['an unknown agent to write as', { type: 'reply', body: 'Hi', agent_id: 3 }, 'actions.0.agent_id'],
    ['a blank body', { type: 'note', body: '  ' }, 'actions.0.body'],
    ['a field no action sets', { type: 'set', field: 'subject', value: 'x' }, 'actions.0.field'],
    ['an unknown team', { type: 'set', field: 'team_id', value: 5 }, 'actions.0.value'],
    ['an inactive agent', { type: 'set', field: 'assignee_id', value: 3 }, 'actions.0.value'],
    ['a null status', { type: 'set', field: 'status', value: null }, 'actions.0.value'],
    ['an unknown type', { type: 'email', body: 'x' }, 'actions.0.type'],
    ['a bad tag', { type: 'add_tags', tags: ['ok', 'x'.repeat(65)] }, 'actions.0.tags.1'],
  ])('refuse %s in an action on its exact path', (_, a, path) => {
    expect(Object.keys(errorsOf(action(a)))).toEqual([path]);
  });

  it('take auto and null as assignees, and null to clear a custom field', () => {
    for (const a of [
      { type: 'set', field: 'assignee_id', value: 'auto' },
      { type: 'set', field: 'assignee_id', value: null },
      { type: 'set', field: 'custom_fields.plan', value: null },
    ]) {
      expect(() => parseRule(action(a), refs())).not.toThrow();
    }
  });

  it('hold time to time rules: required with on time, refused otherwise, within its bounds', () => {
    const timed = { ...action({ type: 'add_tags', tags: ['x'] }), on: 'time' };
    expect(Object.keys(errorsOf(timed))).toEqual(['time']);
    expect(Object.keys(errorsOf({ ...billing, time: { after_minutes: 5, since: 'created_at' } }))).toEqual([
      'time',
    ]);
    expect(
      Object.keys(errorsOf({ ...timed, time: { after_minutes: 525_601, since: 'created_at' } })),
    ).toEqual(['time.after_minutes']);
    expect(Object.keys(errorsOf({ ...timed, time: { after_minutes: 5, since: 'due_at' } }))).toEqual([
      'time.since',
    ]);
  });

  it('name every problem of a body at once, with Laravel-style messages', () => {
    expect(errorsOf({ on: 'sometimes', actions: 'all' })).toEqual({
      name: ['The name field is required.'],
      on: ['The selected on is invalid.'],
      actions: ['The actions field must be an array.'],
    });
  });
});

describe('macro bodies', () => {
  it('take the actions rules take, checked the same way', () => {
    expect(
      parseMacro(
        { name: 'Close as spam', actions: [{ type: 'set', field: 'status', value: 'closed' }] },
        refs(),
      ),
    ).toEqual({ name: 'Close as spam', actions: [{ type: 'set', field: 'status', value: 'closed' }] });
    expect(
      Object.keys(errorsOf({ name: 'm', actions: [{ type: 'note', body: '{{x}}' }] }, 0, parseMacro)),
    ).toEqual(['actions.0.body']);
  });
});

describe('namedOrganizationIds', () => {
  it('lists the organizations a body names, to read before checking it', () => {
    expect(
      namedOrganizationIds({
        conditions: { all: [{ field: 'organization_id', op: 'in', value: [9, 7, 'x'] }] },
        actions: [{ type: 'set', field: 'organization_id', value: 7 }],
      }),
    ).toEqual([7, 9]);
    expect(namedOrganizationIds('nothing')).toEqual([]);
  });
});

describe('rule patches', () => {
  const saved = rule(billing, { id: 5, position: 3 });

  it('lay the fields sent over the rule and check the whole, so a new `on` meets its conditions and time', () => {
    expect(parseRulePatch(saved, { name: 'Renamed', active: false }, refs())).toMatchObject({
      name: 'Renamed',
      active: false,
      position: 3,
      on: 'created',
      actions: saved.actions,
    });
    expect(() => parseRulePatch(saved, { on: 'time' }, refs())).toThrow(ValidationFailed);
    const timed = parseRulePatch(
      saved,
      { on: 'time', time: { after_minutes: 60, since: 'created_at' } },
      refs(),
    );
    expect(timed.time).toEqual({ afterMinutes: 60, since: 'created_at', businessHours: false });
    expect(() => parseRulePatch(saved, {}, refs())).toThrow('The request must change at least one field');
  });

  it('answer the wire form a create takes back unchanged', () => {
    const shown = presentRule(saved, { last_hour: 0, last_day: 1, last_week: 2 });
    expect(shown).toMatchObject({ id: 5, name: billing.name, on: 'created', time: null, version: 1 });
    expect(parseRule(shown, refs())).toEqual({ ...parseRule(billing, refs()), position: 3 });
  });
});
