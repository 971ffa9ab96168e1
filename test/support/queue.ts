import { runQueue } from '#lib/tickets/queue-runner.ts';
import type { ManualClock } from './clock.ts';

/**
 * `work` while the queue runner runs on the manual clock (its polls wait on it); then the runner is stopped and one
 * more second of the clock lets it see so and end (test/api/ticket-queue*.test.ts).
 */
export async function whileQueueRuns<T>(clock: () => ManualClock, work: () => Promise<T>): Promise<T> {
  let stopped = false;
  const run = runQueue(Number.POSITIVE_INFINITY, { stopped: () => stopped });
  try {
    return await work();
  } finally {
    stopped = true;
    await clock().advance(1_000);
    await run;
  }
}
