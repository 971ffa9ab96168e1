import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '#lib/time.ts';
import { useManualClock } from '#test/support/clock.ts';

/**
 * A manual clock for a whole file (useManualClock({ wholeFile: true }): a dispatcher started for the file waits
 * on it from the start) and a test that ends with an advance still running, as a test that timed out does: vitest
 * goes on to the next test while that body still runs.
 */
const clock = useManualClock({ wholeFile: true });

/** Real turns of the event loop: many steps of an advance, were one still running. */
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('a file-wide manual clock', () => {
  // What waits on the clock for the whole file: a runner's poll.
  const stopped = new AbortController();
  beforeAll(() => {
    void (async () => {
      while (!stopped.signal.aborted) await sleep(250, stopped.signal);
    })();
  });
  afterAll(() => stopped.abort());

  let orphan: Promise<unknown> | undefined;

  it('(a test that ends while its advance runs)', async () => {
    const started = clock().nowMs();
    orphan = clock()
      .advanceUntil(() => false, { within: 60_000, label: 'what never comes' })
      .catch((error: unknown) => error);
    while (clock().nowMs() === started) await turns(1);
  });

  it('stops an advance when the test that started it ends: the next test finds the clock where it was left', async () => {
    const at = clock().nowMs();
    await turns(200);
    expect(clock().nowMs()).toBe(at);
    expect(String(await orphan)).toMatch(/the test that advanced the clock ended/);
  });
});
