import { describe, expect, it } from 'vitest';
import { eventShardOfObject } from '#lib/data/events.ts';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { runTimeRules } from '#lib/rules/time-change.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';

/**
 * Time rules at their moment (decisions.md, "Business rules", `on: time`; docs/rules.md, "Time rules at their
 * moment"): a ticket's next moment is its due entry, the due runner fires the rule at or after it (never before),
 * once per cycle, a new `since` value starts a new cycle, a stalled runner fires it late by the stall and once, and
 * what the rule does is a change like any other (its event names the rule; its `updated` rules run, `via: rule`).
 */
const gateway = useGateway();
const clock = useManualClock();
const MINUTE = 60_000;
/** Every due entry of the file's table (test/support/file-table.ts: this file's accounts only). */
const pass = () => breachPass({ limit: 100_000 });

/** A new account with a time rule doing `actions` to a ticket pending an hour. */
async function withTimeRule(name: string, actions: Record<string, unknown>[]) {
  const account = await createTestAccount({ agents: agentsFile(1) });
  const call = keyedCaller(gateway, account.apiKey);
  const rule = await call('POST', '/api/rules', {
    name,
    on: 'time',
    time: { after_minutes: 60, since: 'status_changed_at' },
    conditions: { all: [{ field: 'status', op: 'is', value: 'pending' }] },
    actions,
  });
  expect(rule.status, rule.text).toBe(201);
  return { account, call, rule };
}

/** A new ticket, pending since now (the time rules' `since`). */
async function pendingTicket(call: ReturnType<typeof keyedCaller>, subject = 'S'): Promise<string> {
  const made = await call('POST', '/api/tickets', {
    subject,
    description: 'd',
    requester_email: 'r@c.example',
  });
  expect(made.status, made.text).toBe(201);
  const uuid = made.body.ticket.uuid as string;
  expect((await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' })).status).toBe(200);
  return uuid;
}

async function setUp() {
  const {
    account,
    call,
    rule: nudge,
  } = await withTimeRule('Nudge', [
    { type: 'add_tags', tags: ['nudged'] },
    { type: 'note', body: 'Nudged at {{ticket.status}}.' },
  ]);
  const reacts = await call('POST', '/api/rules', {
    name: 'Seen a rule',
    on: 'updated',
    conditions: { all: [{ field: 'via', op: 'is', value: 'rule' }] },
    actions: [{ type: 'set', field: 'priority', value: 'high' }],
  });
  expect(reacts.status, reacts.text).toBe(201);
  const created = await call('POST', '/api/tickets', {
    subject: 'Waiting on you',
    description: 'd',
    requester_email: 'r@customer.example',
  });
  expect(created.status, created.text).toBe(201);
  const uuid = created.body.ticket.uuid as string;
  const get = async () => (await call('GET', `/api/tickets/${uuid}`)).body.data;
  return { account, call, uuid, get, nudge: nudge.body.data, reacts: reacts.body.data };
}

describe('time rules', () => {
  it('fire at their moment, once per cycle, as a change like any other; a new cycle fires again', async () => {
    const { account, call, uuid, get, nudge, reacts } = await setUp();
    await clock().advance(MINUTE);
    expect((await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' })).status).toBe(200);
    // Not before its moment.
    await clock().advance(59 * MINUTE);
    expect((await pass()).fired).toBe(0);
    expect((await get()).tags).toEqual([]);
    // The moment is the status change + 60 minutes rounded up to the whole minute: at most a minute later.
    await clock().advance(2 * MINUTE);
    expect((await pass()).fired).toBe(2);
    const fired = await get();
    expect(fired).toMatchObject({ tags: ['nudged'], priority: 'high', status: 'pending' });
    // Once per cycle: later passes fire nothing more.
    await clock().advance(120 * MINUTE);
    expect((await pass()).fired).toBe(0);
    const [event] = (
      await readFeedToEnd(gateway.call, account.apiKey, { types: ['ticket.updated'] })
    ).events.slice(-1);
    expect((event?.data as Record<string, unknown> | undefined)?.rules).toEqual([
      { id: nudge.id, version: 1 },
      { id: reacts.id, version: 1 },
    ]);
    const notes = (await call('GET', `/api/tickets/${uuid}/messages`)).body.data as { body: string }[];
    expect(notes.map((m) => m.body)).toEqual(['d', 'Nudged at pending.']);

    // A new status change is a new cycle: it fires again an hour later.
    await call('PATCH', `/api/tickets/${uuid}`, { status: 'open', tags: [] });
    await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' });
    await clock().advance(61 * MINUTE);
    // The nudge, and the rule that reacts to a rule's change (setting the priority it has: still a firing).
    expect((await pass()).fired).toBe(2);
    expect((await get()).tags).toEqual(['nudged']);
  });

  it('a stalled runner fires it late by the stall, once; conditions that stopped holding fire nothing', async () => {
    const { call, uuid, get } = await setUp();
    await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' });
    // No pass for five hours: the first one fires it, once.
    await clock().advance(5 * 60 * MINUTE);
    const passes = await Promise.all([pass(), pass(), pass()]);
    expect(passes.reduce((sum, p) => sum + p.fired, 0)).toBe(2);
    expect((await get()).tags).toEqual(['nudged']);

    // The requester answered before the moment: not pending any more, nothing fires, and the ticket keeps no moment.
    const other = await setUp();
    await other.call('PATCH', `/api/tickets/${other.uuid}`, { status: 'pending' });
    await clock().advance(30 * MINUTE);
    await other.call('PATCH', `/api/tickets/${other.uuid}`, { status: 'open' });
    await clock().advance(60 * MINUTE);
    expect((await pass()).fired).toBe(0);
    const version = (await other.call('GET', `/api/tickets/${other.uuid}`)).headers.get('etag');
    expect(version).toBe('"3"');
  });

  it('a runner killed or refused at any store call of the moment: the next fires it once, late by the fault', async () => {
    const { account, call, uuid, get } = await setUp();
    await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' });
    await clock().advance(62 * MINUTE);
    const orderKey = orderKeyOfUuid(uuid) as string;
    // How many store calls one moment takes (read, the feed's place, the commit...), on a twin ticket.
    const twin = await setUp();
    await twin.call('PATCH', `/api/tickets/${twin.uuid}`, { status: 'pending' });
    await clock().advance(62 * MINUTE);
    const { operations } = await withFault(undefined, () =>
      runTimeRules(twin.account.accountId, orderKeyOfUuid(twin.uuid) as string),
    );
    expect(operations.length).toBeGreaterThanOrEqual(3);
    const tickets = [uuid];
    const modes: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
    // A ticket for each position and mode.
    for (let at = 1; at <= operations.length; at++) {
      for (const _mode of modes) tickets.push(await pendingTicket(call));
    }
    await clock().advance(62 * MINUTE);
    let next = 1;
    for (let at = 1; at <= operations.length; at++) {
      for (const mode of modes) {
        const key = orderKeyOfUuid(tickets[next++] as string) as string;
        await withFault({ at, mode }, () => runTimeRules(account.accountId, key)).catch(() => undefined);
      }
    }
    // The runner again (a new one, or the same after its error), twice: each ticket fired exactly once.
    await runTimeRules(account.accountId, orderKey);
    for (const made of tickets) {
      await runTimeRules(account.accountId, orderKeyOfUuid(made) as string);
      await runTimeRules(account.accountId, orderKeyOfUuid(made) as string);
    }
    const updates = (await readFeedToEnd(gateway.call, account.apiKey, { types: ['ticket.updated'] })).events;
    const ruled = updates.filter((e) => (e.data as Record<string, unknown>).rules !== undefined);
    expect(ruled.map((e) => e.data.object.uuid).sort()).toEqual([...tickets].sort());
    for (const made of tickets) {
      const notes = (await call('GET', `/api/tickets/${made}/messages`)).body.data as { body: string }[];
      expect(
        notes.filter((m) => m.body.startsWith('Nudged')),
        made,
      ).toHaveLength(1);
    }
    expect((await get()).tags).toEqual(['nudged']);
  });

  it('rule replies: at most 3 a ticket an hour, the fourth skipped and said so', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const echo = await call('POST', '/api/rules', {
      name: 'Echo',
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed' }] },
      actions: [
        { type: 'add_tags', tags: ['echoed'] },
        { type: 'reply', body: 'Priority now changed.' },
      ],
    });
    expect(echo.status, echo.text).toBe(201);
    const uuid = (
      await call('POST', '/api/tickets', { subject: 'S', description: 'd', requester_email: 'r@c.example' })
    ).body.ticket.uuid as string;
    for (const priority of ['low', 'high', 'urgent', 'low']) {
      await clock().advance(MINUTE);
      expect((await call('PATCH', `/api/tickets/${uuid}`, { priority })).status).toBe(200);
    }
    const replies = (await call('GET', `/api/tickets/${uuid}/messages`)).body.data as { body: string }[];
    expect(replies.filter((m) => m.body === 'Priority now changed.')).toHaveLength(3);
    const updates = (await readFeedToEnd(gateway.call, account.apiKey, { types: ['ticket.updated'] })).events;
    expect((updates.at(-1)?.data as Record<string, unknown> | undefined)?.rules_skipped).toEqual([
      { id: echo.body.data.id, reason: 'replies_per_hour' },
    ]);
    // An hour on, the guard counts only the last hour's.
    await clock().advance(60 * MINUTE);
    await call('PATCH', `/api/tickets/${uuid}`, { priority: 'high' });
    const later = (await call('GET', `/api/tickets/${uuid}/messages`)).body.data as { body: string }[];
    expect(later.filter((m) => m.body === 'Priority now changed.')).toHaveLength(4);
  });

  it("a pass reads its due tickets in one BatchGetItem and an account's configuration version once, not a ticket each", async () => {
    const { call, uuid } = await setUp();
    const others = [];
    for (let i = 0; i < 4; i++) {
      const made = await call('POST', '/api/tickets', {
        subject: `S ${i}`,
        description: 'd',
        requester_email: 'r@c.example',
      });
      others.push(made.body.ticket.uuid as string);
    }
    for (const id of [uuid, ...others]) await call('PATCH', `/api/tickets/${id}`, { status: 'pending' });
    await clock().advance(62 * MINUTE);
    const { result, operations } = await withFault(undefined, pass);
    expect(result.fired).toBe(10);
    expect(operations.filter((o) => o === 'BatchGetItem')).toHaveLength(1);
    // The configuration's version once, and the rules' version at most once (their 5-second check): 5 before.
    expect(operations.filter((o) => o === 'GetItem').length).toBeLessThanOrEqual(2);
    expect(operations.filter((o) => o === 'TransactWriteItems')).toHaveLength(5);
  });

  /** An account whose time rule tags each of `count` pending tickets an hour on (one event a firing). */
  async function taggedAnHourOn(count: number) {
    const { account, call } = await withTimeRule('Waited', [{ type: 'add_tags', tags: ['waited'] }]);
    const uuids: string[] = [];
    for (let i = 0; i < count; i++) {
      // A millisecond apart: their creation times, so their events' feed shards, differ.
      await clock().advance(1);
      uuids.push(await pendingTicket(call, `W ${i}`));
    }
    /** Each ticket's rule firings in the feed, and whether an event written now is read at once (no place held). */
    const firings = async () => {
      const after = (
        await call('POST', '/api/tickets', {
          subject: 'Later',
          description: 'd',
          requester_email: 'r@c.example',
        })
      ).body.ticket.uuid as string;
      const events = (await readFeedToEnd(gateway.call, account.apiKey)).events;
      const ruled = events.filter((e) => e.type === 'ticket.updated' && 'rules' in e.data);
      return {
        fired: uuids.map((uuid) => ruled.filter((e) => e.data.object.uuid === uuid).length),
        laterRead: events.some((e) => e.type === 'ticket.created' && e.data.object.uuid === after),
      };
    };
    return { uuids, firings };
  }

  it("a pass takes its firings' event places after its read, one UpdateItem a shard, and closes none", async () => {
    const { uuids, firings } = await taggedAnHourOn(8);
    await clock().advance(62 * MINUTE);
    // One ticket at a time: each would take its own place just before its commit.
    const { result, operations } = await withFault(undefined, () =>
      breachPass({ limit: 100_000, concurrency: 1 }),
    );
    expect(result.fired).toBe(8);
    const shards = new Set(uuids.map((uuid) => eventShardOfObject({ uuid })));
    expect(shards.size).toBeGreaterThan(1);
    // Each shard's places in one take, after the read and before the first commit, and no place left for a close.
    expect(operations.filter((o) => o === 'UpdateItem')).toHaveLength(shards.size);
    const first = (name: string) => operations.indexOf(name);
    expect(first('BatchGetItem')).toBeLessThan(first('UpdateItem'));
    expect(operations.lastIndexOf('UpdateItem')).toBeLessThan(first('TransactWriteItems'));
    expect(operations.filter((o) => o === 'PutItem')).toHaveLength(0);
    expect(await firings()).toEqual({ fired: uuids.map(() => 1), laterRead: true });
  });

  it("a pass's fault around its places (their take, a read before the commit, the commit): each fires once, no place held", async () => {
    const faults = [
      { operation: 'UpdateItem', mode: 'lost-answer' },
      { operation: 'UpdateItem', mode: 'conflict' },
      { operation: 'GetItem', mode: 'lost-request' },
      { operation: 'TransactWriteItems', mode: 'lost-request' },
      { operation: 'TransactWriteItems', mode: 'lost-answer' },
    ] as const;
    for (const fault of faults) {
      const { uuids, firings } = await taggedAnHourOn(3);
      await clock().advance(62 * MINUTE);
      await withFault(fault, () => pass());
      // The next pass fires what the fault left, and nothing twice.
      await pass();
      await pass();
      expect(await firings(), `${fault.operation} ${fault.mode}`).toEqual({
        fired: uuids.map(() => 1),
        laterRead: true,
      });
    }
  });
});
