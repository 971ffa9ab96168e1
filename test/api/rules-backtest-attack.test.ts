import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rulesVersionOf } from '#lib/data/accounts/config-version.ts';
import { eventShardOfObject } from '#lib/data/events/lanes.ts';
import { commitWithEvents } from '#lib/data/events/places.ts';
import { accountKeys } from '#lib/data/keys.ts';
import { readRulesMeta, storedRules, writeRule } from '#lib/data/rules/rules.ts';
import { getItem } from '#lib/data/store/client.ts';
import type { Rule } from '#lib/rules/types.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';

/**
 * Adversarial tests of a rule's backtest (docs/rules.md, "Backtest") and of the rules cache's version raised before
 * a rule write's commit (docs/rules.md, "The rules cache"): hostile bodies, another account's feed, parts of every
 * size adding up to the whole, an event stored in two parts, store faults at each call, a raise whose commit failed.
 * A test marked `it.fails` pins a defect found and left (its comment says what breaks).
 */
const gateway = useGateway();
const clock = useManualClock({ wholeFile: true });
const MINUTE = 60_000;
const DAY = 86_400_000;

type Call = ReturnType<typeof keyedCaller>;
interface Part {
  changes: number;
  would_fire: number;
  tickets: string[];
  next_cursor: string | null;
}

async function rule(call: Call, body: Record<string, unknown>): Promise<number> {
  const made = await call('POST', '/api/rules', { actions: [{ type: 'add_tags', tags: ['x'] }], ...body });
  expect(made.status, made.text).toBe(201);
  return made.body.data.id as number;
}

async function backtest(call: Call, id: number, body: Record<string, unknown>): Promise<Part> {
  const answer = await call('POST', `/api/rules/${id}/backtest`, body);
  expect(answer.status, answer.text).toBe(200);
  return answer.body.data as Part;
}

/** Reads the window in parts of `limit` items; at most `cap` parts (a cursor that does not move stops it). */
async function inParts(call: Call, id: number, body: Record<string, unknown>, limit: number, cap = 400) {
  const parts: Part[] = [];
  const cursors: string[] = [];
  let after: string | null = null;
  do {
    const part = await backtest(call, id, { ...body, limit, ...(after ? { after } : {}) });
    parts.push(part);
    if (part.next_cursor !== null && part.next_cursor === after) return { parts, cursors, stuck: true };
    after = part.next_cursor;
    if (after) cursors.push(after);
  } while (after !== null && parts.length < cap);
  return { parts, cursors, stuck: after !== null };
}

const sum = (parts: Part[], key: 'changes' | 'would_fire') => parts.reduce((n, p) => n + p[key], 0);
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * One account's history, made once for the file: a ticket whose first update's event is stored in two parts (a
 * description of random text, ~525 KB packed), then tickets until every feed partition holds some (each: created,
 * made pending, a requester message, which reopens it), a second apart.
 */
let made: Promise<Awaited<ReturnType<typeof makeHistory>>> | undefined;
const history = () => {
  made ??= makeHistory();
  return made;
};

async function makeHistory() {
  const account = await createTestAccount({ agents: agentsFile(1) });
  const call = keyedCaller(gateway, account.apiKey);
  const start = iso(clock().nowMs());
  const create = async (subject: string) => {
    const answer = await call('POST', '/api/tickets', {
      subject,
      description: 'd',
      requester_email: 'r@x.example',
    });
    expect(answer.status, answer.text).toBe(201);
    await clock().advance(1_000);
    return answer.body.ticket as Record<string, unknown> & { uuid: string };
  };
  const big = await create('Big one');
  // The big ticket's update event: too large for one item (PART_BYTES), so stored as a head and a part.
  await commitWithEvents(
    account.accountId,
    [],
    [
      {
        type: 'ticket.updated',
        object: { ...big, priority: 'high', description: randomBytes(525_000).toString('base64') },
        previous: { priority: big.priority },
        version: 2,
      },
    ],
  );
  await clock().advance(1_000);
  const uuids: string[] = [];
  const shards = new Set<number>([eventShardOfObject({ uuid: big.uuid })]);
  while (shards.size < 16) {
    const t = await create(`T${uuids.length}`);
    uuids.push(t.uuid);
    shards.add(eventShardOfObject({ uuid: t.uuid }));
    expect(uuids.length).toBeLessThan(200);
  }
  for (const uuid of uuids) {
    expect((await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' })).status).toBe(200);
    await clock().advance(1_000);
  }
  for (const uuid of uuids.filter((_, i) => i % 2 === 0)) {
    const posted = await call('POST', `/api/tickets/${uuid}/messages`, { body: 'more', author: 'requester' });
    expect(posted.status, posted.text).toBe(201);
    await clock().advance(1_000);
  }
  const rules = {
    created: await rule(call, { name: 'Created', on: 'created' }),
    pending: await rule(call, {
      name: 'Went pending',
      on: 'updated',
      conditions: { all: [{ field: 'status', op: 'changed_to', value: 'pending' }] },
    }),
    reopened: await rule(call, {
      name: 'Reopened',
      on: 'updated',
      conditions: { all: [{ field: 'status', op: 'changed_from', value: 'pending' }] },
    }),
    priority: await rule(call, {
      name: 'Priority',
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed' }] },
    }),
    wrote: await rule(call, {
      name: 'Customer wrote',
      on: 'message',
      conditions: { all: [{ field: 'message.author', op: 'is', value: 'requester' }] },
    }),
  };
  await clock().advance(MINUTE);
  return { account, call, start, big: big.uuid, uuids, rules };
}

describe('a rule backtest, attacked', () => {
  it('refuses hostile bodies field by field, and answers windows at the edges', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const id = await rule(call, { name: 'Any', on: 'created' });
    const now = clock().nowMs();
    const from = iso(now - MINUTE);
    const answer = (body: unknown) => call('POST', `/api/rules/${id}/backtest`, body);
    const refused = async (body: unknown, field: string) => {
      const got = await answer(body);
      expect(got.status, `${JSON.stringify(body).slice(0, 80)}: ${got.text}`).toBe(422);
      expect(Object.keys(got.body.errors ?? {}), got.text).toEqual([field]);
    };
    for (const bad of [12, null, true, [from], { at: from }, 'x'.repeat(100_000), '', 'now', '2026-12-06']) {
      await refused({ from: bad }, 'from');
    }
    // A leap second, an hour 24, no offset: refused, never rolled over.
    for (const bad of ['2026-12-05T23:59:60Z', '2026-12-05T24:00:00Z', '2026-12-05T10:00:00']) {
      await refused({ from: bad }, 'from');
    }
    for (const bad of [1, -1, 'A', 'zzzzzzzzzzzz', '-1', 'a_b', '1 2', ['1']]) {
      await refused({ from, after: bad }, 'after');
    }
    for (const bad of [15, 0, -16, 16.5, 5_001, 1e308, '16', true]) {
      await refused({ from, limit: bad }, 'limit');
    }
    await refused({ from, to: from }, 'to');
    await refused({ from, to: 5 }, 'to');
    // Not an object: the handler's 400, as every JSON route's.
    for (const body of [null, [], 'from', 42]) {
      const got = await answer(body);
      expect(got.status, got.text).toBe(400);
    }
    // +14:00 is the same instant as its Z time; a window before the account existed, or past now, is empty.
    const plus14 = new Date(now - 10 * MINUTE + 14 * 3_600_000).toISOString().replace('Z', '+14:00');
    expect(await backtest(call, id, { from: plus14 })).toEqual(
      await backtest(call, id, { from: iso(now - 10 * MINUTE) }),
    );
    const empty = { changes: 0, would_fire: 0, tickets: [], next_cursor: null };
    expect(await backtest(call, id, { from: iso(now - 29 * DAY), to: iso(now - 28 * DAY) })).toEqual(empty);
    expect(await backtest(call, id, { from, to: iso(now + 365 * DAY) })).toEqual(empty);
    expect(await backtest(call, id, { from: iso(now - 30 * DAY + 1_000), limit: 5_000 })).toEqual(empty);
    // A cursor of a place past every place (11 base-36 digits, beyond 2^53), or 0: valid, read as places.
    expect(await backtest(call, id, { from, after: 'zzzzzzzzzzz' })).toEqual(empty);
    expect(await backtest(call, id, { from, after: '0' })).toEqual(empty);
  });

  it('a from in the future with no to is refused on from, the field the client sent', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const id = await rule(call, { name: 'Any', on: 'created' });
    const got = await call('POST', `/api/rules/${id}/backtest`, { from: iso(clock().nowMs() + DAY) });
    expect(got.status, got.text).toBe(422);
    expect(Object.keys(got.body.errors), got.text).toEqual(['from']);
  });

  it("never counts another account's events, even when the two rules share an id", async () => {
    const [a, b] = await Promise.all([
      createTestAccount({ agents: agentsFile(1) }),
      createTestAccount({ agents: agentsFile(1) }),
    ]);
    const [callA, callB] = [keyedCaller(gateway, a.apiKey), keyedCaller(gateway, b.apiKey)];
    const from = iso(clock().nowMs());
    for (const [call, n] of [
      [callA, 2],
      [callB, 5],
    ] as const) {
      for (let i = 0; i < n; i++) {
        const t = await call('POST', '/api/tickets', {
          subject: 'Invoice',
          description: 'd',
          requester_email: 'r@x.example',
        });
        expect(t.status).toBe(201);
        await clock().advance(1_000);
      }
    }
    const body = {
      name: 'Billing',
      on: 'created',
      conditions: { all: [{ field: 'subject', op: 'contains', value: 'invoice' }] },
    };
    const [idA, idB] = [await rule(callA, body), await rule(callB, body)];
    expect(idA).toBe(idB);
    expect(await backtest(callA, idA, { from })).toMatchObject({ changes: 2, would_fire: 2 });
    expect(await backtest(callB, idB, { from })).toMatchObject({ changes: 5, would_fire: 5 });
    const theirs = await callA('POST', `/api/rules/${idA}/backtest`, { from, after: '0' });
    expect(theirs.body.data).toMatchObject({ changes: 2 });
  });

  it('reads an event stored in two parts once, whole', async () => {
    const { call, start, big, rules } = await history();
    expect(await backtest(call, rules.priority, { from: start })).toEqual({
      changes: expect.any(Number),
      would_fire: 1,
      tickets: [big],
      next_cursor: null,
    });
  });

  // FOUND: at `limit` 16 a part reads one item a partition in its first round; when every partition has items at the
  // cursor and the lowest is the head of an event in two parts, the part stops with that event open and answers
  // `next_cursor` equal to the `after` it was sent: the client reads the same part for ever. Fixed in window.ts.
  it('parts at the least limit always move on (an event in two parts at the cursor)', async () => {
    const { call, start, rules } = await history();
    const walk = await inParts(call, rules.priority, { from: start }, 16);
    expect(walk.stuck, `stuck after ${walk.parts.length} parts`).toBe(false);
    expect(sum(walk.parts, 'would_fire')).toBe(1);
  });

  // Found here: a part could end between the events of one commit (a requester's message is `message.created` then
  // `ticket.updated`), so the parts did not add up; a part now ends at the start of a run of one time in every
  // partition (lib/data/events/window.ts).
  it('parts of any limit add up to the whole window, for every kind of rule', async () => {
    const { call, start, rules } = await history();
    const seen: string[] = [];
    for (const [name, id] of Object.entries(rules).filter(([n]) => n !== 'pending')) {
      const whole = await backtest(call, id, { from: start });
      expect(whole.next_cursor).toBeNull();
      for (const limit of [17, 40]) {
        const walk = await inParts(call, id, { from: start }, limit);
        const got = [sum(walk.parts, 'changes'), sum(walk.parts, 'would_fire')];
        if (walk.stuck || got[0] !== whole.changes || got[1] !== whole.would_fire) {
          seen.push(`${name} limit ${limit}: ${got.join('/')} (whole ${whole.changes}/${whole.would_fire})`);
        }
      }
    }
    expect(seen).toEqual([]);
  });

  it('no ticket is named twice across the parts of a created rule, and the cursors only rise', async () => {
    const { call, start, rules, uuids, big } = await history();
    for (const limit of [16, 64]) {
      const walk = await inParts(call, rules.created, { from: start }, limit);
      const named = walk.parts.flatMap((p) => p.tickets);
      expect(new Set(named).size).toBe(named.length);
      expect(named.sort()).toEqual([big, ...uuids].sort());
      const places = walk.cursors.map((c) => Number.parseInt(c, 36));
      expect(places).toEqual([...places].sort((x, y) => x - y));
      expect(new Set(places).size).toBe(places.length);
    }
  });

  it('a store fault at any call of a backtest answers 503 and writes nothing', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const from = iso(clock().nowMs());
    for (const subject of ['Invoice', 'Other', 'Invoice 2']) {
      const t = await call('POST', '/api/tickets', {
        subject,
        description: 'd',
        requester_email: 'r@x.example',
      });
      expect(t.status).toBe(201);
      await clock().advance(1_000);
    }
    const id = await rule(call, {
      name: 'Billing',
      on: 'created',
      conditions: { all: [{ field: 'subject', op: 'contains', value: 'invoice' }] },
    });
    const feedBefore = (await readFeedToEnd(gateway.call, account.apiKey)).events.length;
    const send = () => call('POST', `/api/rules/${id}/backtest`, { from });
    const dry = await withFault(undefined, send);
    expect(dry.result.status).toBe(200);
    expect(dry.result.body.data).toMatchObject({ changes: 3, would_fire: 2 });
    const writes = dry.operations.filter((op) => /Put|Update|Delete|Transact|Batch/.test(op));
    // The request's rate count is its one write (every request's).
    expect(writes).toEqual(['UpdateItem']);
    const seen: string[] = [];
    for (let at = 1; at <= dry.operations.length; at++) {
      for (const mode of at % 4 === 0
        ? (['lost-request', 'lost-answer', 'conflict'] as const)
        : (['lost-request'] as const)) {
        const run = await withFault({ at, mode }, send);
        if (run.result.status !== 503)
          seen.push(`${mode} at ${at} (${dry.operations[at - 1]}): ${run.result.status}`);
      }
    }
    expect(seen).toEqual([]);
    expect((await readFeedToEnd(gateway.call, account.apiKey)).events.length).toBe(feedBefore);
    expect((await call('GET', `/api/rules/${id}`)).body.data.fired).toEqual({
      last_hour: 0,
      last_day: 0,
      last_week: 0,
    });
  });

  it("a deleted ticket's changes are counted as the feed kept them", async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const from = iso(clock().nowMs());
    const t = await call('POST', '/api/tickets', {
      subject: 'Invoice',
      description: 'd',
      requester_email: 'r@x.example',
    });
    expect(t.status).toBe(201);
    await clock().advance(1_000);
    expect((await call('PATCH', `/api/tickets/${t.body.ticket.uuid}`, { status: 'pending' })).status).toBe(
      200,
    );
    await clock().advance(1_000);
    const deleted = await call('DELETE', `/api/tickets/${t.body.ticket.uuid}`);
    expect(deleted.status, deleted.text).toBeLessThan(300);
    await clock().advance(1_000);
    const id = await rule(call, { name: 'Any', on: 'updated' });
    const got = await backtest(call, id, { from });
    // What it counts is the feed's: the PATCH happened (the deletion is no update), and its ticket is named.
    expect(got).toEqual({ changes: 1, would_fire: 1, tickets: [t.body.ticket.uuid], next_cursor: null });
  });
});

describe('the rules version raised before a rule write whose commit failed', () => {
  async function setUp() {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const tagRule = (tag: string) =>
      call('POST', '/api/rules', {
        name: tag,
        on: 'updated',
        conditions: { all: [{ field: 'priority', op: 'changed' }] },
        actions: [{ type: 'add_tags', tags: [tag] }],
      });
    expect((await tagRule('one')).status).toBe(201);
    const t = await call('POST', '/api/tickets', {
      subject: 'S',
      description: 'd',
      requester_email: 'r@x.example',
    });
    const uuid = t.body.ticket.uuid as string;
    let flip = false;
    const tagsAfterChange = async () => {
      flip = !flip;
      const patched = await call('PATCH', `/api/tickets/${uuid}`, { priority: flip ? 'high' : 'low' });
      expect(patched.status, patched.text).toBe(200);
      const tags = [...(patched.body.ticket.tags as string[])].sort();
      expect((await call('PATCH', `/api/tickets/${uuid}`, { tags: [] })).status).toBe(200);
      return tags;
    };
    expect(await tagsAfterChange()).toEqual(['one']);
    // A rule create whose commit is lost before it reaches the store: the version was raised, META not moved.
    const failed = await withFault({ operation: 'TransactWriteItems', mode: 'lost-request' }, () =>
      tagRule('two'),
    );
    expect(failed.result.status, failed.result.text).toBe(503);
    const ops = failed.operations;
    expect(ops.indexOf('UpdateItem', 1)).toBeLessThan(ops.indexOf('TransactWriteItems'));
    const raised = rulesVersionOf(await getItem(accountKeys.rate(account.accountId)));
    const meta = await readRulesMeta(account.accountId);
    expect(raised).toBe(meta.version + 1);
    return { account, call, tagRule, tagsAfterChange };
  }

  it('requests run the old rules, and the next rule write through this container applies at once', async () => {
    const { call, tagRule, tagsAfterChange } = await setUp();
    expect(await tagsAfterChange()).toEqual(['one']);
    expect((await call('GET', '/api/rules')).body.data.map((r: { name: string }) => r.name)).toEqual(['one']);
    expect((await tagRule('three')).status).toBe(201);
    expect(await tagsAfterChange()).toEqual(['one', 'three']);
    await clock().advance(31_000);
    expect(await tagsAfterChange()).toEqual(['one', 'three']);
  });

  // FOUND: after a raise whose commit failed, the version requests read (N+1) was the one the next write committed
  // too: its own raise did nothing, and a container that read the rules in between (at META N, knowing N+1) kept
  // serving them for up to 5 s after that write answered. The next write now commits past the raise (N+2).
  it('the next rule write from another container applies at once in a container that read the rules since', async () => {
    const { account, tagsAfterChange } = await setUp();
    // This container reads the rules (META N, the version N+1).
    expect(await tagsAfterChange()).toEqual(['one']);
    // Another container deactivates rule `one` (its cache is not this one's: no rulesChanged here).
    const [stored] = (await storedRules(account.accountId)) as [Rule];
    const meta = await readRulesMeta(account.accountId);
    await writeRule(
      account.accountId,
      { before: stored, after: { ...stored, active: false }, meta },
      {
        event: { type: 'rule.updated', object: {}, version: stored.version + 1 },
        sweepAtMs: clock().nowMs(),
      },
    );
    // It committed past the failed raise, and raised the version requests read to it.
    expect((await readRulesMeta(account.accountId)).version).toBe(meta.version + 2);
    expect(rulesVersionOf(await getItem(accountKeys.rate(account.accountId)))).toBe(meta.version + 2);
    expect(await tagsAfterChange()).toEqual([]);
  });
});
