import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createKey } from '#lib/accounts/key-making.ts';
import { rulesVersionOf } from '#lib/data/accounts/config-version.ts';
import { accountKeys, ruleKeys } from '#lib/data/keys.ts';
import { readRulesMeta, storedRules, writeRule } from '#lib/data/rules/rules.ts';
import { dynamo, getItem, tableName } from '#lib/data/store/client.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import type { Rule } from '#lib/rules/types.ts';
import { nowMillis } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { type Answer, keyedCaller, useGateway } from '#test/support/http.ts';
import { type ItemWrite, measureItemWrites } from '#test/support/item-sizes.ts';

/**
 * Rules and macros as resources over the local gateway (decisions.md, "Business rules"; docs/rules.md): CRUD with
 * ETags, If-Match and Idempotency-Key, their events, 422s on the exact path, the 1,000 active rules held under a
 * race, the scopes, the rules cache's 5 seconds, and rules/test answering from the evaluator and writing nothing.
 */
const gateway = useGateway();
const clock = useManualClock({ lazy: true });

const caller = (account: TestAccount, key = account.apiKey) => keyedCaller(gateway, key);

async function setUp() {
  const account = await createTestAccount({ agents: agentsFile(1), teams: [{ name: 'Billing' }] });
  const call = caller(account);
  const teams = (await call('GET', '/api/teams')).body.data as { id: number }[];
  const team = (teams[0] as { id: number }).id;
  const agent = (account.agents[0] as { id: number }).id;
  return { account, call, team, agent };
}

const billing = (team: number, extra: Record<string, unknown> = {}) => ({
  name: 'Route billing mail',
  on: 'created',
  conditions: { all: [{ field: 'subject', op: 'contains', value: 'invoice' }] },
  actions: [
    { type: 'set', field: 'team_id', value: team },
    { type: 'add_tags', tags: ['billing'] },
  ],
  ...extra,
});

describe('rules and macros', () => {
  it('round trip: create, get, list in position order, PATCH with If-Match, delete; events; Idempotency-Key', async () => {
    const { account, call, team } = await setUp();
    const created = await call('POST', '/api/rules', billing(team), { 'Idempotency-Key': 'rule-1' });
    expect(created.status, created.text).toBe(201);
    const rule = created.body.data;
    expect(rule).toEqual({
      id: expect.any(Number),
      name: 'Route billing mail',
      active: true,
      position: 1,
      on: 'created',
      conditions: { all: [{ field: 'subject', op: 'contains', value: 'invoice' }], any: [] },
      actions: [
        { type: 'set', field: 'team_id', value: team },
        { type: 'add_tags', tags: ['billing'] },
      ],
      time: null,
      version: 1,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      updated_at: rule.created_at,
      fired: { last_hour: 0, last_day: 0, last_week: 0 },
    });
    const again = await call('POST', '/api/rules', billing(team), { 'Idempotency-Key': 'rule-1' });
    expect(again.body).toEqual(created.body);
    // Last by default; an explicit position goes where it says.
    const second = (await call('POST', '/api/rules', billing(team, { name: 'Second' }))).body.data;
    expect(second.position).toBe(2);
    const first = (await call('POST', '/api/rules', billing(team, { name: 'First', position: 0 }))).body.data;
    const got = await call('GET', `/api/rules/${rule.id}`);
    expect(got.body).toEqual({ data: rule });
    expect(got.headers.get('etag')).toBe('"1"');
    const listed = await call('GET', '/api/rules?limit=2');
    expect(listed.body.data.map((r: Rule) => r.name)).toEqual(['First', 'Route billing mail']);
    expect(listed.body.next_cursor).toBe(`1.${rule.id}`);
    const rest = await call('GET', `/api/rules?limit=2&after=${listed.body.next_cursor}`);
    expect(rest.body).toEqual({ data: [second], next_cursor: null });

    const patched = await call('PATCH', `/api/rules/${rule.id}`, { active: false }, { 'If-Match': '"1"' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.headers.get('etag')).toBe('"2"');
    expect(patched.body.data).toMatchObject({ id: rule.id, active: false, version: 2 });
    const stale = await call('PATCH', `/api/rules/${rule.id}`, { name: 'Late' }, { 'If-Match': '"1"' });
    expect(stale.status).toBe(412);
    const same = await call('PATCH', `/api/rules/${rule.id}`, { active: false });
    expect(same.headers.get('etag')).toBe('"2"');
    const deleted = await call('DELETE', `/api/rules/${first.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toEqual(first);
    expect((await call('GET', `/api/rules/${first.id}`)).status).toBe(404);
    expect((await readRulesMeta(account.accountId)).active).toBe(1);

    const events = (await readFeedToEnd(gateway.call, account.apiKey, { types: ['rule.*'] })).events;
    expect(events.map((e) => [e.type, e.data.object.id, e.data.version])).toEqual([
      ['rule.created', rule.id, 1],
      ['rule.created', second.id, 1],
      ['rule.created', first.id, 1],
      ['rule.updated', rule.id, 2],
      ['rule.deleted', first.id, 2],
    ]);
    expect(events[3]?.data.previous).toEqual({ active: true, version: 1, updated_at: rule.updated_at });

    const macro = await call('POST', '/api/macros', {
      name: 'Ask',
      actions: [{ type: 'reply', body: 'Which invoice, {{requester.name}}?' }],
    });
    expect(macro.status, macro.text).toBe(201);
    const id = macro.body.data.id;
    const renamed = await call('PATCH', `/api/macros/${id}`, { name: 'Ask again' }, { 'If-Match': '"1"' });
    expect(renamed.body.data).toMatchObject({ name: 'Ask again', actions: macro.body.data.actions });
    expect(renamed.headers.get('etag')).toBe('"2"');
    expect((await call('GET', '/api/macros')).body).toEqual({ data: [renamed.body.data], next_cursor: null });
    expect((await call('DELETE', `/api/macros/${id}`)).status).toBe(200);
    const macroEvents = (await readFeedToEnd(gateway.call, account.apiKey, { types: ['macro.*'] })).events;
    expect(macroEvents.map((e) => e.type)).toEqual(['macro.created', 'macro.updated', 'macro.deleted']);
  });

  it('422 on the exact path: unknown field, op, value, team, agent, placeholder; 51 conditions; time', async () => {
    const { call, team } = await setUp();
    const refused = async (path: string, body: unknown) => {
      const answer = await call('POST', path, body);
      expect(answer.status, answer.text).toBe(422);
      return Object.keys(answer.body.errors);
    };
    const condition = (c: Record<string, unknown>) => billing(team, { conditions: { all: [c] } });
    expect(await refused('/api/rules', condition({ field: 'mood', op: 'is', value: 'x' }))).toEqual([
      'conditions.all.0.field',
    ]);
    expect(
      await refused('/api/rules', condition({ field: 'status', op: 'resembles', value: 'open' })),
    ).toEqual(['conditions.all.0.op']);
    expect(await refused('/api/rules', condition({ field: 'status', op: 'is', value: 'asleep' }))).toEqual([
      'conditions.all.0.value',
    ]);
    const sets = (action: Record<string, unknown>) =>
      billing(team, { actions: [{ type: 'add_tags', tags: ['a'] }, action] });
    expect(await refused('/api/rules', sets({ type: 'set', field: 'team_id', value: 999 }))).toEqual([
      'actions.1.value',
    ]);
    expect(await refused('/api/rules', sets({ type: 'note', body: 'Hi {{ticket.mood}}' }))).toEqual([
      'actions.1.body',
    ]);
    const many = Array.from({ length: 51 }, () => ({ field: 'status', op: 'is', value: 'open' }));
    expect(await refused('/api/rules', billing(team, { conditions: { all: many } }))).toEqual(['conditions']);
    expect(await refused('/api/rules', billing(team, { on: 'time' }))).toEqual(['time']);
    expect(
      await refused('/api/macros', { name: 'M', actions: [{ type: 'note', body: 'x', agent_id: 999 }] }),
    ).toEqual(['actions.0.agent_id']);
    const long = { type: 'note', body: 'x'.repeat(60_000) };
    expect(await refused('/api/rules', billing(team, { actions: [long, long] }))).toEqual(['actions']);
    expect((await call('GET', '/api/rules')).body.data).toEqual([]);
  });

  it('the 1,001st active rule is a 422 on active, also when two creates race for the 1,000th place', async () => {
    const { account, call, team } = await setUp();
    // 999 active rules, as the count item holds them (what every rule write is conditioned on).
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...ruleKeys.meta(account.accountId), type: 'rules_meta', n: 999, rv: 7, top: 0 },
      }),
    );
    const race = await Promise.all([
      call('POST', '/api/rules', billing(team, { name: 'A' })),
      call('POST', '/api/rules', billing(team, { name: 'B' })),
    ]);
    expect(race.map((a) => a.status).sort()).toEqual([201, 422]);
    const lost = race.find((a) => a.status === 422) as Answer;
    expect(lost.body.errors).toEqual({
      active: ['The account already has 1000 active rules: deactivate one first.'],
    });
    const parked = await call('POST', '/api/rules', billing(team, { name: 'Parked', active: false }));
    expect(parked.status).toBe(201);
    const wake = await call('PATCH', `/api/rules/${parked.body.data.id}`, { active: true });
    expect(wake.status).toBe(422);
    expect(Object.keys(wake.body.errors)).toEqual(['active']);
    const won = race.find((a) => a.status === 201) as Answer;
    expect((await call('DELETE', `/api/rules/${won.body.data.id}`)).status).toBe(200);
    expect((await call('PATCH', `/api/rules/${parked.body.data.id}`, { active: true })).status).toBe(200);
    // Four writes landed on version 7. The race's loser may have raised the rules version before its commit was
    // refused (when it read the count before the winner's commit): the next write then commits past that raise.
    const meta = await readRulesMeta(account.accountId);
    expect(meta.active).toBe(1000);
    expect([11, 12]).toContain(meta.version);
    // After a write that landed, the version requests read is the rules' own.
    expect(rulesVersionOf(await getItem(accountKeys.rate(account.accountId)))).toBe(meta.version);
  });

  it('scopes: rules:read reads and tests, rules:write writes, tickets scopes neither', async () => {
    const { account, call, team } = await setUp();
    const rule = (await call('POST', '/api/rules', billing(team))).body.data;
    const withScopes = async (scopes: string[]) =>
      caller(
        account,
        (await createKey(account.accountId, { name: scopes.join(' '), scopes: scopes as never })).api_key,
      );
    const tickets = await withScopes(['tickets:write']);
    const refused = await tickets('GET', '/api/rules');
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ message: 'This key lacks the scope rules:read.' });
    expect((await tickets('POST', '/api/rules/test', { ticket: 'x', change: {} })).status).toBe(403);
    const reader = await withScopes(['rules:read']);
    expect((await reader('GET', `/api/rules/${rule.id}`)).status).toBe(200);
    expect((await reader('GET', '/api/macros')).status).toBe(200);
    const write = await reader('POST', '/api/macros', { name: 'M', actions: [{ type: 'note', body: 'x' }] });
    expect(write.body).toEqual({ message: 'This key lacks the scope rules:write.' });
    expect((await reader('DELETE', `/api/rules/${rule.id}`)).status).toBe(403);
    const writer = await withScopes(['rules:write']);
    expect((await writer('PATCH', `/api/rules/${rule.id}`, { name: 'Renamed' })).status).toBe(200);
  });

  it('rules/test answers fired and not fired from the evaluator, the ticket as it would be, and writes nothing', async () => {
    const { call, team, agent } = await setUp();
    const ticket = (
      await call('POST', '/api/tickets', {
        subject: 'Invoice 7',
        description: 'D',
        requester_email: 'r@c.test',
      })
    ).body.ticket;
    const urgent = await call('POST', '/api/rules', {
      name: 'Urgent to billing',
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed_to', value: 'urgent' }] },
      actions: [
        { type: 'set', field: 'team_id', value: team },
        { type: 'reply', body: 'We are on {{ticket.reference}}.', agent_id: agent },
      ],
    });
    const vip = await call('POST', '/api/rules', {
      name: 'VIP',
      on: 'updated',
      conditions: { all: [{ field: 'tags', op: 'contains', value: 'vip' }] },
      actions: [{ type: 'add_tags', tags: ['seen'] }],
    });
    const before = await call('GET', `/api/tickets/${ticket.uuid}`);
    const tested = await call('POST', '/api/rules/test', {
      ticket: ticket.reference,
      change: { priority: 'urgent' },
    });
    expect(tested.status, tested.text).toBe(200);
    const data = tested.body.data;
    expect(data.fired).toEqual([
      {
        id: urgent.body.data.id,
        name: 'Urgent to billing',
        matched: [{ path: 'conditions.all.0', field: 'priority', op: 'changed_to', value: 'urgent' }],
      },
    ]);
    expect(data.not_fired).toEqual([
      {
        id: vip.body.data.id,
        name: 'VIP',
        failed: [{ path: 'conditions.all.0', field: 'tags', op: 'contains', value: 'vip', actual: [] }],
      },
    ]);
    expect(data.ticket).toMatchObject({ uuid: ticket.uuid, priority: 'urgent', team: { id: team } });
    expect(data.messages).toEqual([
      {
        rule_id: urgent.body.data.id,
        visibility: 'public',
        body: `We are on ${ticket.reference}.`,
        agent_id: agent,
      },
    ]);
    expect(data.mail).toEqual([{ to: 'r@c.test', body: `We are on ${ticket.reference}.` }]);
    const after = await call('GET', `/api/tickets/${ticket.uuid}`);
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
    expect(after.body).toEqual(before.body);

    // Drafts instead of the saved rules, read as a create reads them.
    const draft = await call('POST', '/api/rules/test', {
      ticket: ticket.uuid,
      change: { priority: 'urgent' },
      rules: [
        {
          name: 'D',
          on: 'updated',
          conditions: { all: [{ field: 'priority', op: 'is', value: 'urgent' }] },
          actions: [{ type: 'add_tags', tags: ['d'] }],
        },
      ],
    });
    expect(draft.body.data.fired.map((f: { id: number }) => f.id)).toEqual([1]);
    expect(draft.body.data.ticket.tags).toEqual(['d']);
    // At a moment: the time rules due then, and the updated rules after them.
    const nudge = {
      name: 'Nudge',
      on: 'time',
      time: { after_minutes: 60, since: 'created_at' },
      conditions: { all: [{ field: 'status', op: 'is', value: 'open' }] },
      actions: [{ type: 'add_tags', tags: ['nudged'] }],
    };
    const at = (minutes: number) => new Date(Date.parse(ticket.created_at) + minutes * 60_000).toISOString();
    const early = await call('POST', '/api/rules/test', { ticket: ticket.uuid, at: at(59), rules: [nudge] });
    expect(early.body.data).toMatchObject({ fired: [], not_fired: [] });
    const due = await call('POST', '/api/rules/test', { ticket: ticket.uuid, at: at(61), rules: [nudge] });
    expect(due.body.data.fired.map((f: { name: string }) => f.name)).toEqual(['Nudge']);
    expect(due.body.data.ticket.tags).toEqual(['nudged']);
    const emptyChange = await call('POST', '/api/rules/test', { ticket: ticket.uuid, change: {} });
    expect(Object.keys(emptyChange.body.errors)).toEqual(['change']);
    const badDraft = await call('POST', '/api/rules/test', {
      ticket: ticket.uuid,
      change: { priority: 'low' },
      rules: [
        { name: 'D', on: 'updated', conditions: { all: [{ field: 'priority', op: 'nope' }] }, actions: [] },
      ],
    });
    expect(badDraft.status).toBe(422);
    expect(Object.keys(badDraft.body.errors).sort()).toEqual([
      'rules.0.actions',
      'rules.0.conditions.all.0.op',
    ]);
    const unknown = await call('POST', '/api/rules/test', {
      ticket: '00000000-0000-4000-8000-000000000000',
      change: {},
    });
    expect(unknown.status, unknown.text).toBe(404);
  });

  it('writes what docs/capacity.md counts: the rule, the META item and the event in one transaction', async () => {
    const { account, call, team } = await setUp();
    await call('POST', '/api/rules', billing(team, { name: 'Warm-up' }));
    const measure = async (work: () => Promise<unknown>) => {
      const writes = await measureItemWrites(work, [account.accountId]);
      const inCommit = writes.filter((w) => w.transactional);
      const units = (ws: ItemWrite[]) => ws.reduce((n, w) => n + w.writeUnits, 0);
      const shapes = inCommit.map((w) =>
        `${w.operation} ${w.shape}`.replace(/EVENTS#.*$/, 'EVENTS#<acc>#<shard>').replace(/\d{10}$/, '<n>'),
      );
      return { writes, inCommit, units, shapes: shapes.sort() };
    };
    let id = 0;
    const created = await measure(async () => {
      id = (await call('POST', '/api/rules', billing(team))).body.data.id;
    });
    expect(created.shapes).toEqual([
      'Put EVENTS#<acc>#<shard>',
      'Put RULES#<acc> / RULE#<n>',
      'Update RULES#<acc> / META',
    ]);
    const updated = await measure(() => call('PATCH', `/api/rules/${id}`, { name: 'Renamed' }));
    expect(updated.inCommit).toHaveLength(3);
    const deleted = await measure(() => call('DELETE', `/api/rules/${id}`));
    expect(deleted.shapes).toContain('Delete RULES#<acc> / RULE#<n>');
    for (const [write, m] of Object.entries({ created, updated, deleted })) {
      console.log(
        `rule ${write}: ${m.writes.length} items (${m.inCommit.length} in the commit), ` +
          `${m.units(m.writes)} WU (${m.units(m.inCommit)} in the commit); largest ` +
          `${Math.max(...m.writes.map((w) => Math.max(w.bytesBefore, w.bytesAfter)))} B`,
      );
    }
  });

  it('the rules cache: served for 5 seconds, then the rules version checked and the rules read again', async () => {
    const { account, call, team } = await setUp();
    const manual = clock();
    const made = (await call('POST', '/api/rules', billing(team))).body.data;
    expect((await getActiveRules(account.accountId)).map((r) => r.id)).toEqual([made.id]);
    // Another container's write (nothing here forgets the cached rules).
    const [rule] = (await storedRules(account.accountId)) as [Rule];
    const meta = await readRulesMeta(account.accountId);
    const event = { type: 'rule.updated', object: {}, version: 2 };
    const write = { before: rule, after: { ...rule, active: false }, meta };
    await writeRule(account.accountId, write, { event, sweepAtMs: nowMillis() });
    await manual.advance(5_000);
    expect((await getActiveRules(account.accountId)).map((r) => r.id)).toEqual([made.id]);
    await manual.advance(1);
    expect(await getActiveRules(account.accountId)).toEqual([]);
  });
});
