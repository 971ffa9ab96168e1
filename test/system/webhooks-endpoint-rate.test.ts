import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startDuePool } from '#infra/local/webhooks.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { getDelivery, listDeliveryAttempts } from '#lib/data/webhook-deliveries.ts';
import type { DueRunner } from '#lib/webhooks/due.ts';
import { useManualClock } from '#test/support/clock.ts';
import { createTestEndpoint, fanOutEvents, type Receiver, startReceiver } from '#test/support/webhooks.ts';

/**
 * One endpoint's rate (docs/webhooks.md, "The runners"; docs/capacity.md, "Webhook deliveries"): the biggest account
 * writes 150 events/s, and all of them may go to one endpoint. 1,000 events to one endpoint whose receiver answers
 * each after 200 ms, from the local runner pool (`npm start`'s, infra/local/webhooks.ts) with its default
 * concurrency: every delivery arrives once, verified by the standardwebhooks library, and the endpoint's attempts
 * overlap enough for ≥ 150 deliveries/s.
 *
 * The rate is read on the manual clock: it stands still while the store answers and moves only to the next waiter (a
 * receiver's 200 ms, a runner's look), so it is the rate the runners' concurrency gives a 200 ms receiver with the
 * store's time left out: the structural figure (attempts in flight at once × 1 / 200 ms), the same however loaded the
 * machine. What DynamoDB Local on this machine adds is measured by the bench (`npm run bench -- --webhooks`).
 */
process.env[STAGE_VARIABLE] = LOCAL_STAGE;

const receivers: Receiver[] = [];
const pools: DueRunner[][] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).flatMap((pool) => pool.map((r) => r.stop())));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
// After the hook above: the clock is put away (what waits on it woken) before the runners are stopped.
const clock = useManualClock();

describe("one endpoint's rate", () => {
  it('1,000 events to one endpoint (a 200 ms receiver) arrive once each, verified, at ≥ 150/s on the clock', async () => {
    const accountId = `acc_${randomBytes(6).toString('hex')}`;
    const receiver = await startReceiver();
    receivers.push(receiver);
    receiver.answer(() => ({ status: 204, delayMs: 200 }));
    const endpoint = await createTestEndpoint(accountId, {
      url: receiver.url,
      secret: receiver.secret,
      events: ['*'],
    });
    const ids = await fanOutEvents(accountId, 1_000);
    const { runners: pool } = startDuePool({ runners: 2, onError: () => {} });
    pools.push(pool);

    // Attempts in flight at the receiver (arrived, not answered yet), at every step of the clock.
    let peak = 0;
    await clock().advanceUntil(
      () => {
        const open = receiver.deliveries.filter((d) => d.answered === null).length;
        peak = Math.max(peak, open);
        return receiver.deliveries.length >= ids.length && open === 0;
      },
      { within: 120_000, label: '1,000 deliveries answered' },
    );
    const arrived = receiver.deliveries.map((d) => d.at);
    const answered = receiver.deliveries.map((d) => d.answeredAt ?? 0);
    const tookMs = Math.max(...answered) - Math.min(...arrived);
    const perSecond = Math.round((ids.length / tookMs) * 1000);
    console.info(
      `one endpoint: ${ids.length} deliveries in ${tookMs} ms of the clock (${perSecond}/s), at most ${peak} in flight, ` +
        `over ${receiver.connections} connections`,
    );

    // None lost, none twice, every one verified (standardwebhooks' Webhook.verify) and answered 204.
    const byId = receiver.byId();
    expect([...byId.keys()].sort()).toEqual([...ids].sort());
    expect(receiver.deliveries).toHaveLength(ids.length);
    expect(receiver.deliveries.every((d) => d.verified && d.answered === 204)).toBe(true);
    // Recorded: every delivery succeeded after one attempt, and the log counts each attempt once.
    await clock().advanceUntil(
      async () =>
        (await listDeliveryAttempts(accountId, endpoint.id, { page: 1, perPage: 1 })).total === 1_000,
      { within: 30_000, label: 'every attempt recorded' },
    );
    for (const id of ids.slice(0, 50)) {
      expect(await getDelivery(accountId, endpoint.id, id)).toMatchObject({
        state: 'succeeded',
        attempts: 1,
      });
    }
    // The structure behind the rate: ≥ 32 attempts of the one endpoint at once (32 / 0.2 s = 160/s), and the rate.
    expect(peak).toBeGreaterThanOrEqual(32);
    expect(perSecond).toBeGreaterThanOrEqual(150);
    // Kept alive at the full window: a connection (a TLS handshake, deployed) is not paid per delivery.
    expect(receiver.connections).toBeLessThanOrEqual(100);
  }, 600_000);
});
