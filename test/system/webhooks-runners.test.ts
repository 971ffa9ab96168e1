import { afterEach, describe, expect, it } from 'vitest';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { DUE_SHARDS, dueShardOf, shardsOfRunner } from '#lib/data/webhooks/due-shards.ts';
import { nowMillis } from '#lib/time.ts';
import { DueRunner } from '#lib/webhooks/due.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { lambdaContext } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { inserted, storedEventItem, streamBatch } from '#test/support/stream-records.ts';
import {
  createTestEndpoint,
  type Receiver,
  removeFromDueIndex,
  startReceiver,
} from '#test/support/webhooks.ts';

/**
 * The due runners as a pool (lib/webhooks/due.ts, lib/data/webhooks/due-shards.ts; docs/webhooks.md, "The runners"): runners
 * on disjoint shard sets never take the same endpoint, and every delivery arrives; and the slow lane: one account's
 * hanging receivers hold at most their share of a runner while another account's deliveries flow. Each test's
 * runners wait on its manual clock: they look again, and attempts are cut, as the test advances it.
 */
process.env.WEBHOOK_RETRY_SCHEDULE = '1,1,1,1,1';
process.env.WEBHOOK_TIMEOUT_MS = '1000';
process.env[STAGE_VARIABLE] = LOCAL_STAGE;

const gateway = useGateway();
const receivers: Receiver[] = [];
const runners: DueRunner[] = [];
/** Endpoints made here: their due entries (a hanging receiver's retries) are taken out after each test. */
const made: { accountId: string; endpointId: string }[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  for (const { accountId, endpointId } of made.splice(0)) await removeFromDueIndex(accountId, endpointId);
});
// After the hook above, so that its clock is put away (what waits on it woken: a hanging attempt cut) first.
const clock = useManualClock();

/** An account with `endpoints` endpoints on `*`, each to a receiver of its own, and `events` ticket creates fanned out. */
async function accountWith(endpoints: number, events: number) {
  const account = await createTestAccount();
  const hooks: { receiver: Receiver; id: string }[] = [];
  for (let i = 0; i < endpoints; i++) {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const endpoint = await createTestEndpoint(account.accountId, {
      url: receiver.url,
      secret: receiver.secret,
      events: ['*'],
    });
    hooks.push({ receiver, id: endpoint.id });
    made.push({ accountId: account.accountId, endpointId: endpoint.id });
  }
  const fanOut = async () => {
    for (let i = 0; i < events; i++) {
      const created = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject: `Printer ${i}`, description: 'Smoke.', requester_email: 'ann@client.test' },
      });
      expect(created.status).toBe(201);
    }
    const feed = await gateway.call('GET', '/api/events?limit=100', { key: account.apiKey });
    const ids = (feed.body.data as { id: string }[]).map((e) => e.id);
    expect(ids).toHaveLength(events);
    const records = await Promise.all(
      ids.map(async (id, i) => inserted(await storedEventItem(account.accountId, id), String(1000 + i))),
    );
    expect(await streamHandler(streamBatch(...records), lambdaContext)).toEqual({ batchItemFailures: [] });
    return ids;
  };
  return { account, hooks, fanOut };
}

function runner(options: ConstructorParameters<typeof DueRunner>[0]) {
  const started = new DueRunner({ pollMs: 100, onError: () => {}, ...options });
  runners.push(started);
  void started.runUntil(Number.POSITIVE_INFINITY);
  return started;
}

describe('the due runners as a pool', () => {
  it('splits the shards: 4 runners on disjoint shards each take only their own endpoints, and every delivery arrives once', async () => {
    expect([0, 1, 2, 3].flatMap((r) => shardsOfRunner(r, 4)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: DUE_SHARDS }, (_, s) => s),
    );
    const { account, hooks, fanOut } = await accountWith(12, 10);
    const ids = await fanOut();
    const leasedBy = new Map<string, Set<number>>();
    for (let place = 0; place < 4; place++) {
      runner({
        shards: shardsOfRunner(place, 4),
        onLease: (_acc, endpointId) =>
          leasedBy.set(endpointId, (leasedBy.get(endpointId) ?? new Set()).add(place)),
      });
    }
    await clock().advanceUntil(() => hooks.every((h) => h.receiver.byId().size === ids.length), {
      within: 30_000,
      label: 'every event at every endpoint',
    });
    for (const { receiver, id } of hooks) {
      expect([...receiver.byId().keys()].sort()).toEqual([...ids].sort());
      expect(receiver.deliveries.length, 'no delivery twice').toBe(ids.length);
      expect([...(leasedBy.get(id) ?? [])]).toEqual([dueShardOf(account.accountId, id) % 4]);
    }
  });

  it('two pools at once (a run overlapping the next): every delivery arrives, duplicates rare', async () => {
    const { hooks, fanOut } = await accountWith(8, 15);
    const ids = await fanOut();
    for (let pool = 0; pool < 2; pool++) {
      for (let place = 0; place < 2; place++) {
        runner({ shards: shardsOfRunner(place, 2) });
      }
    }
    await clock().advanceUntil(() => hooks.every((h) => h.receiver.byId().size === ids.length), {
      within: 30_000,
      label: 'every event at every endpoint',
    });
    const deliveries = hooks.reduce((n, h) => n + h.receiver.deliveries.length, 0);
    expect(deliveries).toBeGreaterThanOrEqual(ids.length * hooks.length);
    expect(deliveries - ids.length * hooks.length, 'duplicates').toBeLessThanOrEqual(2);
  });
});

describe('the slow lane', () => {
  it("one account's hanging receivers hold at most their slow-lane share while another account's deliveries flow", async () => {
    // A runner of 8 slots, all of which one account may take (perAccount 8): without the slow lane, account A's three
    // hanging endpoints (4 attempts each) would hold all 8 for each attempt limit.
    const a = await accountWith(3, 8);
    for (const h of a.hooks) h.receiver.answer(() => 'hang');
    const b = await accountWith(2, 20);
    for (const h of b.hooks) h.receiver.answer(() => ({ status: 204, delayMs: 50 }));
    await a.fanOut();
    const started = runner({
      global: 8,
      perAccount: 8,
      perEndpoint: 4,
      slowPerAccount: 2,
    });
    // A's first attempts take every slot, and time out at 1 s: its endpoints go to the slow lane.
    await clock().advanceUntil(() => a.hooks.every((h) => started.isSlow(a.account.accountId, h.id)), {
      within: 10_000,
      label: "A's endpoints in the slow lane",
    });
    const bIds = await b.fanOut();
    const bFannedOut = nowMillis();
    // The slots each account holds, at every step of the clock: each attempt then waits on it (A's receivers
    // hang, B's answer after 50 ms), holding its slot.
    let peakA = 0;
    let peakB = 0;
    await clock().advanceUntil(
      () => {
        peakA = Math.max(peakA, started.slotsOf(a.account.accountId));
        peakB = Math.max(peakB, started.slotsOf(b.account.accountId));
        return b.hooks.every(
          (h) => h.receiver.byId().size === bIds.length && h.receiver.deliveries.every((d) => d.answered),
        );
      },
      { within: 15_000, label: "B's deliveries, answered" },
    );
    const bTookMs = nowMillis() - bFannedOut;
    console.info(
      `slow lane: A held at most ${peakA} of 8 slots, B ${peakB}; B's 40 deliveries took ${bTookMs} ms of the clock`,
    );
    // A still hangs (its endpoints still in the slow lane) and holds at most its slow-lane share: 2 of 8 slots.
    expect(a.hooks.every((h) => started.isSlow(a.account.accountId, h.id))).toBe(true);
    expect(peakA).toBeGreaterThan(0);
    expect(peakA).toBeLessThanOrEqual(2);
    // B used the rest: more than its endpoints' share of one (up to 6 of the 8), and 40 deliveries at 50 ms each in
    // well under the 40 × 1 s that waiting behind A's timeouts would take.
    expect(peakB).toBeGreaterThan(2);
    expect(bTookMs).toBeLessThan(8_000);
    for (const h of b.hooks)
      expect(h.receiver.deliveries.every((d) => d.verified && d.answered === 204)).toBe(true);
  }, 60_000);
});
