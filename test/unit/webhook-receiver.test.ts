import { afterEach, describe, expect, it } from 'vitest';
import { setClock } from '#lib/time.ts';
import { closePools, postWebhook } from '#lib/webhooks/post.ts';
import { ManualClock } from '#test/support/clock.ts';
import { type Receiver, startReceiver } from '#test/support/webhooks.ts';

/**
 * The system tests' receiver (test/support/webhooks.ts) on the manual clock: what it answers reaches the service
 * as the clock says, however fast or slow the machine steps the clock.
 */
let receiver: Receiver | undefined;
afterEach(async () => {
  setClock();
  closePools();
  await receiver?.close();
});

const post = (port: number, timeoutMs: number) =>
  postWebhook(
    { url: new URL(`http://127.0.0.1:${port}/hook`), address: '127.0.0.1', family: 4 },
    Buffer.from('{}'),
    { 'content-type': 'application/json' },
    timeoutMs,
  );

describe('the test receiver on the manual clock', () => {
  it('sends an endless answer status at once: the attempt cut at its limit is an answer (200), not a timeout', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    receiver = await startReceiver();
    receiver.answer(() => ({ status: 200, trickle: true }));
    const attempt = post(receiver.port, 1_000);
    // The whole limit at once: the clock moves as soon as the request waits on it, in far less real time than any
    // real-time pacing of the answer would take.
    await manual.advance(1_000);
    expect(await attempt).toMatchObject({ status: 200, error: null, durationMs: 1_000 });
  });
});
