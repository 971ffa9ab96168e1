import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { type Clock, clock, setClock } from '#lib/time.ts';

/**
 * The tests' clock (docs/testing.md, "The clock"): a manual clock, installed as the service's one clock
 * (lib/time.ts, setClock), that stands still until the test advances it. `advance(ms)` runs what became due in
 * order, each at its own time: it moves the clock to the first waiter due (a runner's poll, a lease's renewal, a
 * backoff, an attempt's limit), wakes it, lets what it started settle (its store calls and webhook requests
 * answered, until everything waits on the clock again), and goes on to the next, up to `ms`. So a test of a timing
 * rule takes no real time, and what it sees at each moment is what the rule says, however slow the machine.
 *
 * What settling waits for: the outgoing HTTP requests of this process (the store's calls, webhook attempts; seen
 * through node:http's diagnostics channel), but those whose answer itself waits on the clock (a test receiver that
 * hangs or answers after a delay: parkOnClock), and a few turns of the event loop with none in flight.
 */

/** One sleep on the clock: when it is due (epoch ms), and how it is woken. Kept in order of `at`, then of arrival. */
interface Waiter {
  at: number;
  wake: () => void;
}

/** Real milliseconds a settle may go without a request ending before the advance fails (a request never answered). */
const SETTLE_LIMIT_MS = 20_000;
/** Turns of the event loop with nothing in flight before the clock moves on. */
const IDLE_TURNS = 3;

const inFlight = new Set<ClientRequest>();
/** Local ports of requests whose answers wait on the clock (parkOnClock). */
const parked = new Set<number>();
let watching = false;

function watchRequests(): void {
  if (watching) return;
  watching = true;
  subscribe('http.client.request.start', (message) => {
    const { request } = message as { request: ClientRequest };
    inFlight.add(request);
    request.once('close', () => {
      inFlight.delete(request);
      lastEnded = Date.now();
    });
  });
}

/** When a request last ended (real epoch ms): a settle that sees requests end goes on however long it takes. */
let lastEnded = 0;

const busy = () =>
  [...inFlight].filter((r) => !(r.socket?.localPort !== undefined && parked.has(r.socket.localPort)));

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const realPause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until nothing this process started is under way but what waits on the clock. */
async function settle(): Promise<void> {
  const started = Date.now();
  for (let idle = 0; idle < IDLE_TURNS; ) {
    await turn();
    const open = busy();
    if (open.length === 0) {
      idle++;
      continue;
    }
    idle = 0;
    if (Date.now() - Math.max(started, lastEnded) > SETTLE_LIMIT_MS) {
      const where = open.map((r) => `${r.method} ${r.host}${r.path}`).join(', ');
      throw new Error(
        `the manual clock could not settle: requests still open after ${SETTLE_LIMIT_MS} ms: ${where}`,
      );
    }
    await realPause(2);
  }
}

/**
 * A request a test's server answers only once the clock has moved (a receiver that hangs, answers after a delay
 * or never ends its answer): the manual clock does not wait for it to settle. Until its response is done.
 */
export function parkOnClock(response: ServerResponse): void {
  const port = response.req.socket.remotePort;
  if (port === undefined) return;
  parked.add(port);
  response.once('close', () => parked.delete(port));
}

export class ManualClock implements Clock {
  /** Epoch microseconds. */
  #us: number;
  #waiters: Waiter[] = [];
  /** Bumped when the test that may be advancing the clock ends (endAdvances): its advances stop. */
  #generation = 0;

  /** Starts at `startMs` (epoch ms, to the microsecond; the real now by default). */
  constructor(startMs = Date.now()) {
    this.#us = Math.round(startMs * 1000);
    watchRequests();
  }

  nowMs(): number {
    return Math.floor(this.#us / 1000);
  }

  nowUs(): number {
    return this.#us;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted || !(ms > 0)) return resolve();
      const aborted = () => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve();
      };
      const waiter: Waiter = {
        at: this.nowMs() + Math.ceil(ms),
        wake: () => {
          signal?.removeEventListener('abort', aborted);
          resolve();
        },
      };
      const at = this.#waiters.findIndex((w) => w.at > waiter.at);
      this.#waiters.splice(at === -1 ? this.#waiters.length : at, 0, waiter);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  /**
   * Puts the clock at `epochMs`, back or on, waking no one: a test that runs its requests at instants of its
   * choosing (a Friday afternoon, a date in 2030). Only while nothing waits on the clock.
   */
  jumpTo(epochMs: number): void {
    if (this.#waiters.length > 0)
      throw new Error('ManualClock.jumpTo: something waits on the clock; advance it');
    this.#us = Math.round(epochMs * 1000);
  }

  /** Waiters on the clock now (a runner's loops waiting for their next look, a lease's renewal). */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Moves the clock `ms` on, waking each waiter at its time in order, and settling after each. */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.#us / 1000 + ms);
  }

  /** Moves the clock on to `epochMs` (never back), as advance does. */
  advanceTo(epochMs: number): Promise<void> {
    return this.#advanceTo(epochMs, this.#generation);
  }

  async #advanceTo(epochMs: number, generation: number): Promise<void> {
    const target = Math.round(epochMs * 1000);
    await this.#settle(generation);
    for (let next = this.#waiters[0]; next && next.at * 1000 <= target; next = this.#waiters[0]) {
      this.#us = Math.max(this.#us, next.at * 1000);
      const due = this.#waiters.filter((w) => w.at <= this.nowMs());
      this.#waiters = this.#waiters.slice(due.length);
      for (const waiter of due) waiter.wake();
      await this.#settle(generation);
    }
    this.#us = Math.max(this.#us, target);
  }

  /** Settles, then refuses to go on for a test that has ended. */
  async #settle(generation: number): Promise<void> {
    await settle();
    if (generation !== this.#generation)
      throw new Error(
        'the test that advanced the clock ended (it failed or timed out) before this advance did: it stops here, ' +
          'and does not move the clock under the next tests',
      );
  }

  /**
   * Stops every advance under way, at its next step: the test that started it is over (a file-wide clock's
   * afterEach; a test that timed out leaves its body running, and its advance would go on moving the clock, and
   * running the file's dispatcher, under the next tests).
   */
  endAdvances(): void {
    this.#generation++;
  }

  /**
   * Advances the clock from waiter to waiter until `done()` answers something other than false, undefined or null
   * (checked before the first step and after each), failing once `within` ms of the clock have passed without it:
   * waitFor (wait.ts) in the service's time, for what only the clock's moving brings (a runner's next look, a
   * retry's due time). Answers what `done` answered.
   */
  async advanceUntil<T>(
    done: () => T | Promise<T>,
    { within, label = 'the condition' }: { within: number; label?: string },
  ): Promise<Exclude<T, false | undefined | null>> {
    const end = this.nowMs() + within;
    const generation = this.#generation;
    await this.#settle(generation);
    for (;;) {
      const value = await done();
      if (value !== false && value !== undefined && value !== null)
        return value as Exclude<T, false | undefined | null>;
      const next = this.#waiters[0];
      if (!next || next.at > end) {
        if (this.nowMs() >= end) throw new Error(`not within ${within} ms of the clock: ${label}`);
        await this.#advanceTo(end, generation);
      } else await this.#advanceTo(next.at, generation);
    }
  }

  /** Lets what runs now settle without moving the clock (a runner's look started by the test itself). */
  settle(): Promise<void> {
    return settle();
  }

  /**
   * Wakes every waiter at once, without moving the clock: the clock is being put away (the test is over), and what
   * still runs (a dispatcher started for the file) goes on waiting on the next one.
   */
  release(): void {
    this.endAdvances();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.wake();
  }
}

/**
 * A manual clock for each test of the file or describe block (starting at the real time), the system clock again
 * after it; call it after the hooks that stop what waits on it (runners), so that it is put away first and what
 * still waits is woken (the hooks run in reverse). Answers the current test's clock.
 * - `lazy`: installed at the test's first use of it instead: a test that never asks keeps the system clock.
 * - `wholeFile`: one clock for every test of the file, installed before the file's other hooks run (call it
 *   first): what those start (a dispatcher) waits on it from the start.
 */
export function useManualClock(options: { lazy?: boolean; wholeFile?: boolean } = {}): () => ManualClock {
  let current: ManualClock | undefined;
  const install = () => {
    current = new ManualClock();
    setClock(current);
    return current;
  };
  const remove = () => {
    if (!current) return;
    setClock();
    current.release();
    current = undefined;
  };
  if (options.wholeFile) {
    beforeAll(install);
    afterEach(() => current?.endAdvances());
    afterAll(remove);
  } else {
    if (!options.lazy) beforeEach(install);
    afterEach(remove);
  }
  return () => current ?? install();
}

/**
 * Runs `work` with the service's clock standing at `epochMs` (a manual clock; to the microsecond), then puts the
 * clock it found back: a ticket created ten minutes ago, a key used after its expiry.
 */
export async function atTime<T>(epochMs: number, work: (clock: ManualClock) => Promise<T>): Promise<T> {
  const before = clock();
  const manual = new ManualClock(epochMs);
  setClock(manual);
  try {
    return await work(manual);
  } finally {
    setClock(before);
    manual.release();
  }
}
