import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { placeOfEventId } from '#lib/data/events.ts';
import { eventKeys } from '#lib/data/keys.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { addDeliveries, duePending, getDelivery, leaseEndpoint } from '#lib/data/webhook-deliveries.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { deliverOnce, HeldEndpoint } from '#lib/webhooks/deliver.ts';
import { DueRunner } from '#lib/webhooks/due.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { waitFor } from '#test/support/wait.ts';
import { accountWithTicketEvent, type Receiver } from '#test/support/webhooks.ts';

/**
 * One attempt when the store fails around it (docs/webhooks.md, "The due entry, leases and claims", "At least
 * once"): what the receiver answered is not lost with a failed write, and a claim is never outlived by its attempt.
 * A due runner on the file's table (its accounts only), on the tests' DynamoDB Local; receivers on this machine
 * (the local stage's URL policy); the attempt limit 1 s, so a claim lasts 11 s, of the test's manual clock: a claim
 * runs out when the test advances the clock past it.
 */
process.env[STAGE_VARIABLE] = LOCAL_STAGE;
process.env.WEBHOOK_TIMEOUT_MS = '1000';
const gateway = useGateway();
const receivers: Receiver[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  delete process.env.WEBHOOK_RETRY_SCHEDULE;
});
// After the hook above, so that its clock is put away (what waits on it woken) before the runners stop.
const clock = useManualClock();
afterAll(() => {
  delete process.env[STAGE_VARIABLE];
  delete process.env.WEBHOOK_TIMEOUT_MS;
});

/** An account with one endpoint to a receiver of ours, and one ticket.created event pending for it. */
async function setUp() {
  const { account, hook, endpoint, event } = await accountWithTicketEvent(gateway, receivers);
  expect(await addDeliveries(account.accountId, endpoint.id, [event])).toBe(1);
  const runner = () => {
    // A look every second of the clock: what is tested is claims and due times, not how often a runner looks.
    const started = new DueRunner({ onError: () => {}, pollMs: 1_000 });
    const running = started.runUntil(Number.POSITIVE_INFINITY);
    cleanups.push(async () => {
      await started.stop();
      await running;
    });
    return started;
  };
  return { account, hook, endpoint, event, runner };
}

/**
 * Fails, once, the first call of the shared client that `matches`: before it reaches the store, as a connection reset
 * does, or (`answerLost`) after the store did the work, as a timeout reading the answer does. Answers whether it has.
 */
function failOnce(
  matches: (input: Record<string, unknown>, command: string) => boolean,
  mode: 'requestLost' | 'answerLost' = 'requestLost',
) {
  let failed = false;
  const name = `fail-once-${Math.random()}`;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (!failed && matches(args.input as Record<string, unknown>, String(context.commandName))) {
        failed = true;
        if (mode === 'answerLost') await next(args);
        throw Object.assign(new Error('socket hang up (injected)'), { code: 'ECONNRESET' });
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  cleanups.push(() => dynamo.middlewareStack.remove(name));
  return () => failed;
}

/**
 * Delays, once, the first call of the shared client that `matches` by `ms` of the service's clock; answers whether
 * it has begun.
 */
function slowOnce(matches: (input: Record<string, unknown>, command: string) => boolean, ms: number) {
  let slowed = false;
  const name = `slow-once-${Math.random()}`;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (!slowed && matches(args.input as Record<string, unknown>, String(context.commandName))) {
        slowed = true;
        await sleep(ms);
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  cleanups.push(() => dynamo.middlewareStack.remove(name));
  return () => slowed;
}

/** Counts the calls of the shared client that `matches`. */
function count(matches: (input: Record<string, unknown>, command: string) => boolean) {
  let n = 0;
  const name = `count-${Math.random()}`;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (matches(args.input as Record<string, unknown>, String(context.commandName))) n++;
      return next(args);
    },
    { step: 'initialize', name },
  );
  cleanups.push(() => dynamo.middlewareStack.remove(name));
  return () => n;
}

/** Whether an UpdateItem writes a delivery of this endpoint (a claim, in the runner). */
const claims = (endpointId: string) => (input: Record<string, unknown>, command: string) =>
  command.startsWith('UpdateItem') &&
  String((input.Key as { pk?: string })?.pk).endsWith(`#${endpointId}`) &&
  String((input.Key as { pk?: string })?.pk).startsWith('WEBHOOK_DELIVERY#');

/** Whether a TransactWriteItems records an attempt of this endpoint. */
const recordsAttempt = (endpointId: string) => (input: Record<string, unknown>, command: string) =>
  command.startsWith('TransactWrite') &&
  JSON.stringify(input).includes('"webhook_attempt"') &&
  JSON.stringify(input).includes(endpointId);

describe('a webhook attempt when the store fails', () => {
  it("records the receiver's answer though the store failed the first write of it: a 429's Retry-After holds", async () => {
    process.env.WEBHOOK_RETRY_SCHEDULE = '1';
    const { account, hook, endpoint, event, runner } = await setUp();
    hook.answer((_, i) => (i === 0 ? { status: 429, headers: { 'Retry-After': '60' } } : { status: 200 }));
    const failed = failOnce(recordsAttempt(endpoint.id));
    const claimed = count(claims(endpoint.id));
    runner();
    await waitFor(() => hook.deliveries.length === 1 && failed(), {
      timeout: 10_000,
      label: 'the attempt, and the failed write of its outcome',
    });
    const answeredAt = hook.deliveries[0]?.answeredAt ?? 0;
    // The outcome lands (the claim lasts 11 s); the delivery waits for the Retry-After, and is not attempted again
    // meanwhile: not when its claim ends either (12.5 s of the clock, the runner looking every second).
    await clock().advance(12_500);
    const delivery = await getDelivery(account.accountId, endpoint.id, event.id);
    console.log(
      `a 429 with Retry-After: 60 whose record the store failed once: ${hook.deliveries.length} requests in ` +
        `12.5 s (at ${hook.deliveries.map((d) => d.at - answeredAt)} ms after the 429), ${claimed()} claims ` +
        `tried; the delivery: ` +
        `${JSON.stringify({ state: delivery?.state, attempts: delivery?.attempts, lastStatus: delivery?.lastStatus })}`,
    );
    expect(hook.deliveries.map((d) => d.webhookId)).toEqual([event.id]);
    expect(delivery).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 429 });
    expect(delivery?.nextAt).toBeGreaterThanOrEqual(answeredAt + 59_000);
    // And the runner did not spin on its own claim meanwhile.
    expect(claimed()).toBeLessThan(5);
  }, 30_000);
});

describe('a webhook claim whose answer the store lost', () => {
  it('is taken again by its runner at once, which sends the delivery without spinning on its own claim', async () => {
    const { hook, endpoint, event, runner } = await setUp();
    const failed = failOnce(claims(endpoint.id), 'answerLost');
    const claimed = count(claims(endpoint.id));
    const started = nowMillis();
    runner();
    // Within 5 s of the clock: its own claim (11 s) is not waited out.
    await clock().advanceUntil(() => hook.deliveries.length > 0, { within: 5_000, label: 'the delivery' });
    const after = nowMillis() - started;
    console.log(
      `a claim landed with its answer lost (${failed()}): delivered after ${after} ms of the clock, ${claimed()} claims tried`,
    );
    expect(hook.deliveries.map((d) => d.webhookId)).toEqual([event.id]);
    expect(claimed()).toBeLessThan(5);
  }, 30_000);
});

describe('a webhook attempt when the store is slow', () => {
  it('never outlives its claim: a second runner claiming the delivery after it does not send while the first still sends', async () => {
    const { account, hook, endpoint } = await setUp();
    // Each answer takes 800 ms (within the 1 s limit).
    hook.answer(() => ({ status: 200, delayMs: 800 }));
    const leased = await leaseEndpoint(account.accountId, endpoint.id, 'runner-a', 60_000);
    if (!leased) throw new Error('not leased');
    const [pending] = await duePending(account.accountId, endpoint.id, nowMillis(), 10);
    if (!pending) throw new Error('no pending delivery');
    // The store takes 10.5 s to answer runner A's read of the event (after its claim, which lasts 11 s).
    const slowed = slowOnce(
      (input, command) =>
        command.startsWith('Query') &&
        (input.ExpressionAttributeValues as Record<string, unknown>)?.[':pk'] ===
          eventKeys.partitionOf(account.accountId, placeOfEventId(pending.eventId) ?? 0),
      10_500,
    );
    const a = deliverOnce(new HeldEndpoint(account.accountId, endpoint.id, 'runner-a', leased), pending);
    await waitFor(slowed, { timeout: 5_000, label: "runner A's slowed read" });
    // Runner B (its lease taken when A's ran out under a stalled store) finds the delivery due once A's claim ended.
    await clock().advance(11_200);
    const b = deliverOnce(new HeldEndpoint(account.accountId, endpoint.id, 'runner-b', leased), pending);
    // Each answer takes 800 ms of the clock.
    const both = Promise.all([a, b]);
    await clock().advance(1_000);
    const results = await both;
    const sent = hook.deliveries.map((d) => ({ at: d.at, answeredAt: d.answeredAt }));
    const overlapping = sent.filter((d, i) => i > 0 && d.at < (sent[i - 1]?.answeredAt ?? 0));
    console.log(
      `runner A's read answered after 10.5 s of its 11 s claim: results ${results}; ${sent.length} requests, ` +
        `${overlapping.length} sent while the one before was still open`,
    );
    expect(sent.length).toBeGreaterThan(0);
    expect(overlapping).toEqual([]);
  }, 30_000);
});
