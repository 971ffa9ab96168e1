import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { nowMillis } from '#lib/time.ts';
import { DueRunner } from '#lib/webhooks/due.ts';
import { useManualClock } from '#test/support/clock.ts';
import {
  createTestEndpoint,
  fanOutEvents,
  type Receiver,
  removeFromDueIndex,
  startReceiver,
} from '#test/support/webhooks.ts';

/**
 * Hanging receivers across accounts and across runs (docs/webhooks.md, "The runners"; docs/capacity.md, "Webhook
 * deliveries"): 50 endpoints in 50 accounts whose receivers never answer, known to hang from an earlier run of the
 * runners, hold at most the runner's slow-lane share of its slots from the first moment of the next run (a new
 * runner: nothing of the last run in its memory), and a healthy endpoint of another account is attempted at once and
 * retried on its schedule. Each runner waits on the test's manual clock: attempts are cut at their limit, and
 * retries fall due, as the test advances it.
 */
process.env.WEBHOOK_RETRY_SCHEDULE = '1,1,1,1,1';
process.env.WEBHOOK_TIMEOUT_MS = '4000';
process.env[STAGE_VARIABLE] = LOCAL_STAGE;

const receivers: Receiver[] = [];
const runners: DueRunner[] = [];
const made: { accountId: string; endpointId: string }[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  for (const { accountId, endpointId } of made.splice(0)) await removeFromDueIndex(accountId, endpointId);
});
// After the hook above, so that its clock is put away (what waits on it woken: a hanging attempt cut) first.
const clock = useManualClock();

/** A runner of 16 slots, all of which one account may take, holding at most `maxEndpoints` endpoints at once; its slow-lane shares are its defaults. */
function runner(maxEndpoints = 64) {
  const started = new DueRunner({ global: 16, perAccount: 16, pollMs: 250, maxEndpoints, onError: () => {} });
  runners.push(started);
  void started.runUntil(Number.POSITIVE_INFINITY);
  return started;
}

/** An endpoint (on `*`) of a new account to a new receiver of ours, answering as `answer` says, with `events` fanned out. */
async function endpointWith(events: number, answer: Parameters<Receiver['answer']>[0]) {
  const accountId = `acc_${randomBytes(6).toString('hex')}`;
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.answer(answer);
  const endpoint = await createTestEndpoint(accountId, {
    url: receiver.url,
    secret: receiver.secret,
    events: ['*'],
  });
  made.push({ accountId, endpointId: endpoint.id });
  const ids = await fanOutEvents(accountId, events);
  return { accountId, receiver, endpoint, ids };
}

describe('hanging endpoints in many accounts', () => {
  it("50 hanging endpoints in 50 accounts, known from an earlier run, do not delay a healthy endpoint's attempts or its retry", async () => {
    const hanging = await Promise.all(Array.from({ length: 50 }, () => endpointWith(2, () => 'hang')));
    // An earlier run: each hanging endpoint's first attempt times out (4 s), then the run ends.
    const earlier = runner();
    await clock().advanceUntil(() => hanging.every((h) => h.receiver.deliveries.length > 0), {
      within: 120_000,
      label: 'an attempt at every hanging endpoint',
    });
    await clock().advance(4_500);
    // Its attempts still running are cut at their limit as the clock moves on.
    let stopped = false;
    void earlier.stop().then(() => {
      stopped = true;
    });
    await clock().advanceUntil(() => stopped, { within: 10_000, label: 'the earlier run to end' });

    // The next run, with a healthy endpoint's delivery due: its receiver answers 500 once, then 204.
    const healthy = await endpointWith(1, (_, i) =>
      i === 0 ? { status: 500 } : { status: 204, delayMs: 50 },
    );
    const dueAt = nowMillis();
    // It holds 8 endpoints at once, fewer than the hanging ones due before the healthy one: a slow endpoint it cannot
    // give a slow-lane slot must not keep one of its places (before: all 8 held by hanging endpoints waiting for the
    // 2 slow slots, and the healthy endpoint was never leased).
    const next = runner(8);
    let peakHanging = 0;
    await clock().advanceUntil(
      () => {
        const held = hanging.reduce((n, h) => n + next.slotsOf(h.accountId), 0);
        peakHanging = Math.max(peakHanging, held);
        return healthy.receiver.deliveries.filter((d) => d.answered !== null).length >= 2;
      },
      { within: 30_000, label: "the healthy endpoint's delivery and its retry" },
    );
    const [first, retry] = healthy.receiver.deliveries;
    if (!first || !retry) throw new Error('two attempts expected');
    console.info(
      `hanging share: the 50 hanging endpoints held at most ${peakHanging} of 16 slots; the healthy endpoint's first ` +
        `attempt came ${first.at - dueAt} ms after its due, its retry ${retry.at - (first.answeredAt ?? 0)} ms after the 500 (schedule: 1,000 ms)`,
    );
    expect([first.webhookId, retry.webhookId]).toEqual([healthy.ids[0], healthy.ids[0]]);
    expect(first.verified && retry.verified).toBe(true);
    // Within the runner's first looks (250 ms each), not behind the hanging attempts' 4 s: each look reads 16 due
    // endpoints, all hanging ones before it, keeps 2 of them (their slow-lane slots) and lets the rest's leases lapse,
    // so the healthy one is leased within ~50 / 6 looks.
    expect(first.at - dueAt).toBeLessThanOrEqual(2_500);
    // On its schedule: 1 s after the failed attempt, and no later than the runner's next look after that.
    expect(retry.at - (first.answeredAt ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(retry.at - (first.answeredAt ?? 0)).toBeLessThanOrEqual(1_500);
    // The hanging endpoints held at most the runner's slow-lane share (2 of 16) at any step of the run.
    expect(peakHanging).toBeGreaterThan(0);
    expect(peakHanging).toBeLessThanOrEqual(2);
  }, 600_000);
});
