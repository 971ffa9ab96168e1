import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { firingPuts } from '#lib/data/rules/firings.ts';
import { commit } from '#lib/data/store/transact.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { itemBytes } from '#test/support/dynamo-figures.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { measureItemWrites } from '#test/support/item-sizes.ts';

/**
 * A rule's `fired` (decisions.md, "Business rules"; docs/rules.md, "`fired`"): the firings a change writes in its
 * own transaction (firingPuts, written here through the store's commit as a change would), counted exactly in the
 * last hour, day and week by GET, the list, PATCH and DELETE; a new rule answers 0s.
 */
const gateway = useGateway();
const clock = useManualClock({ lazy: true });

const US = { hour: 3_600_000_000, day: 86_400_000_000, week: 604_800_000_000 };

const rule = (name: string) => ({
  name,
  on: 'created',
  conditions: { all: [{ field: 'subject', op: 'contains', value: 'invoice' }] },
  actions: [{ type: 'add_tags', tags: ['billing'] }],
});

async function setUp() {
  const account = await createTestAccount();
  const call = keyedCaller(gateway, account.apiKey);
  const made = await call('POST', '/api/rules', rule('Counted'));
  expect(made.status, made.text).toBe(201);
  return { account, call, id: made.body.data.id as number };
}

/** Firings of rule `id` at each time, each a change of its own ticket (as its commit would write them). */
async function fire(account: TestAccount, id: number, times: number[], ticketUuid = randomUUID()) {
  for (const at of times) await commit(firingPuts(account.accountId, [{ id, version: 1 }], at, ticketUuid));
}

describe('rule firings', () => {
  it('GET and the list count exactly at the window edges; another rule, another account and the future not', async () => {
    const { account, call, id } = await setUp();
    const other = (await call('POST', '/api/rules', rule('Other'))).body.data.id as number;
    // A whole millisecond a day on: every firing time below is exact to the microsecond.
    const now = (Math.floor(clock().nowMs()) + 86_400_000) * 1000;
    await fire(account, id, [
      now, // just now
      now - US.hour, // exactly an hour old: in the last hour
      now - US.hour - 1, // an hour and a microsecond: the day's
      now - US.day,
      now - US.day - 1, // the week's only
      now - US.week,
      now - US.week - 1, // older than a week
      now - 8 * US.day, // kept by nothing but TTL's lateness
      now + 1, // a host whose clock runs ahead: not counted before its time
    ]);
    await fire(account, other, [now - 1, now - 2]);
    const elsewhere = await createTestAccount();
    await fire(elsewhere, id, [now - 1, now - US.hour, now - US.day]);
    await clock().advanceTo(now / 1000);

    const got = await call('GET', `/api/rules/${id}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data.fired).toEqual({ last_hour: 2, last_day: 4, last_week: 6 });
    const listed = (await call('GET', '/api/rules')).body.data as { id: number; fired: unknown }[];
    expect(Object.fromEntries(listed.map((r) => [r.id, r.fired]))).toEqual({
      [id]: { last_hour: 2, last_day: 4, last_week: 6 },
      [other]: { last_hour: 2, last_day: 2, last_week: 2 },
    });

    // A microsecond on: the future firing comes in, and each window's oldest goes out (then 1 h + 1 µs, 1 d + 1 µs,
    // 7 d + 1 µs old).
    await clock().advance(0.001);
    const fired = (await call('GET', `/api/rules/${id}`)).body.data.fired;
    expect(fired).toEqual({ last_hour: 2, last_day: 4, last_week: 6 });
    // An hour on: the newest alone is within the hour (exactly an hour old), the one before it an hour and a µs.
    await clock().advance(3_600_000);
    expect((await call('GET', `/api/rules/${id}`)).body.data.fired).toEqual({
      last_hour: 1,
      last_day: 4,
      last_week: 6,
    });
  });

  it('PATCH and DELETE answer the counts (events too); a new rule answers 0s', async () => {
    const { account, call, id } = await setUp();
    await fire(account, id, [clock().nowUs() - US.day - 1, clock().nowUs() - 5]);
    const patched = await call('PATCH', `/api/rules/${id}`, { name: 'Renamed' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.fired).toEqual({ last_hour: 1, last_day: 1, last_week: 2 });
    const deleted = await call('DELETE', `/api/rules/${id}`);
    expect(deleted.body.data.fired).toEqual({ last_hour: 1, last_day: 1, last_week: 2 });
    const created = await call('POST', '/api/rules', rule('New'));
    expect(created.body.data.fired).toEqual({ last_hour: 0, last_day: 0, last_week: 0 });
    // The events' objects are the rule as its GET answers it; the counts are not a change (no `previous.fired`).
    const events = (await readFeedToEnd(gateway.call, account.apiKey, { types: ['rule.*'] })).events;
    const counts = { last_hour: 1, last_day: 1, last_week: 2 };
    const zeros = { last_hour: 0, last_day: 0, last_week: 0 };
    expect(new Map(events.map((e) => [`${e.type} ${e.data.object.id}`, e.data.object.fired]))).toEqual(
      new Map([
        [`rule.created ${id}`, zeros],
        [`rule.updated ${id}`, counts],
        [`rule.deleted ${id}`, counts],
        [`rule.created ${created.body.data.id}`, zeros],
      ]),
    );
    const previous = events.find((e) => e.type === 'rule.updated')?.data.previous;
    expect(Object.keys(previous ?? {}).sort()).toEqual(['name', 'updated_at', 'version']);
  });

  it('two changes of one ticket at one microsecond firing the same rule at the same place both count', async () => {
    const { account, call, id } = await setUp();
    const ticket = randomUUID();
    const at = clock().nowUs();
    await fire(account, id, [at, at], ticket);
    // And one change firing two rules: a Put each, one transaction.
    const second = (await call('POST', '/api/rules', rule('Second'))).body.data.id as number;
    await commit(
      firingPuts(
        account.accountId,
        [
          { id: second, version: 1 },
          { id, version: 1 },
        ],
        at,
        ticket,
      ),
    );
    expect((await call('GET', `/api/rules/${id}`)).body.data.fired.last_hour).toBe(3);
    expect((await call('GET', `/api/rules/${second}`)).body.data.fired.last_hour).toBe(1);
  });

  it('a firing is one item of ~150 bytes: 2 write units in its change transaction, with an 8-day TTL', async () => {
    const { account, id } = await setUp();
    const at = clock().nowUs();
    const ticket = randomUUID();
    const writes = await measureItemWrites(() => fire(account, id, [at], ticket), [account.accountId]);
    expect(writes).toHaveLength(1);
    const [write] = writes as [(typeof writes)[0]];
    expect(write.shape).toMatch(/^RULE_FIRED#<acc>#\d{10} \/ \d{16}#<uuid>#00#[0-9a-f]{8}$/);
    expect(write).toMatchObject({ operation: 'Put', transactional: true, bytesBefore: 0, writeUnits: 2 });
    expect(write.bytesAfter).toBeLessThan(200);
    const [put] = firingPuts(account.accountId, [{ id, version: 1 }], at, ticket);
    const item = put?.action.Put?.Item as Record<string, unknown>;
    expect(itemBytes(item)).toBe(write.bytesAfter);
    expect(item.expires_at).toBe(Math.floor(at / 1_000_000) + 8 * 86_400);
    console.log(`a firing: ${write.bytesAfter} B, ${write.writeUnits} WU in a transaction`);
  });
});
