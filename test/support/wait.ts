/**
 * Waits for something a test can observe instead of sleeping a fixed time: `check` is polled until it returns
 * a value other than `false`, `undefined` or `null` (that value is returned), and the wait fails, naming what it
 * waited for, once `timeout` has passed. A fixed sleep is either too short on a busy machine or wasted time on an
 * idle one.
 */
export interface WaitOptions {
  /** Milliseconds before giving up. */
  timeout: number;
  /** Milliseconds between two checks (default 50). */
  interval?: number;
  /** What is waited for, for the error message. */
  label?: string;
}

export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeout, interval = 50, label = 'the condition' }: WaitOptions,
): Promise<Exclude<T, false | undefined | null>> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value !== false && value !== undefined && value !== null)
      return value as Exclude<T, false | undefined | null>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${label}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/**
 * Lets `ms` pass to prove an absence (a delivery not sent, an attempt not repeated): nothing observable can end
 * such a wait early, so it is the one fixed wait, and `why` says which absence it gives time to show. With
 * `broken`, polled like `waitFor`'s check, the wait fails as soon as the absence is broken, naming `why`; the
 * test's own assertions after it still say what was expected.
 */
export async function quietFor(ms: number, why: string, broken?: () => unknown): Promise<void> {
  const started = Date.now();
  const end = started + ms;
  for (let now = started; now < end; now = Date.now()) {
    await new Promise((resolve) => setTimeout(resolve, broken ? Math.min(50, end - now) : end - now));
    if (broken?.())
      throw new Error(`not quiet for ${ms} ms (${why}): broken after ${Date.now() - started} ms`);
  }
}
