/**
 * Waits for something a test can observe instead of sleeping a fixed time: `check` is polled until it returns
 * a value other than `false`, `undefined` or `null` (that value is returned), and the wait fails, naming what it
 * waited for, once `timeout` has passed. A fixed sleep is either too short on a busy machine or wasted time on an
 * idle one. What only the service's time brings (a runner's next look, a retry, a lease running out) is waited for
 * on the manual clock instead (clock.ts, advanceUntil), and an absence is shown by advancing it.
 */
export interface WaitOptions {
  /** Milliseconds before giving up. */
  timeout: number;
  /** Milliseconds between two checks (default 50). */
  interval?: number;
  /** What is waited for, for the error message. */
  label?: string;
  /** What else the error message says on a timeout (a service's last output: why it never came). */
  context?: () => string;
}

export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeout, interval = 50, label = 'the condition', context }: WaitOptions,
): Promise<Exclude<T, false | undefined | null>> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value !== false && value !== undefined && value !== null)
      return value as Exclude<T, false | undefined | null>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeout} ms waiting for ${label}${context ? `\n${context()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
