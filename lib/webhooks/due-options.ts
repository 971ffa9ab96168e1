/** What a due runner (./due.ts) is told: its slots, its shards, its pace. */
export interface DueRunnerOptions {
  /**
   * Attempts of one endpoint at once, its window's widest (WEBHOOK_CONCURRENCY_PER_ENDPOINT, default 48; at most
   * LOG_LANES): 48 attempts to a receiver answering in 200 ms are ~200 deliveries/s.
   */
  perEndpoint?: number;
  /** Attempts of one account's endpoints at once (default 48: the biggest account's one endpoint at full width). */
  perAccount?: number;
  /** Attempts at once in this runner (default 128). */
  global?: number;
  /**
   * Attempts at once of one account's endpoints in the slow lane (default 4): an endpoint whose attempt timed out
   * runs one attempt at a time while it is in the slow lane (SLOW_LANE_MS, on the endpoint item: every runner, in
   * this run and the next, knows it), and all of an account's such endpoints share this many slots.
   */
  slowPerAccount?: number;
  /** Attempts at once of every account's slow-lane endpoints together (default an eighth of `global`). */
  slowGlobal?: number;
  /**
   * The due shards this runner reads (the worker pool: each runner its own, lib/data/webhooks/due-shards.ts shardsOfRunner);
   * all by default.
   */
  shards?: readonly number[];
  /** Told of each endpoint this runner leased (tests, logs). */
  onLease?: ((accountId: string, endpointId: string) => void) | undefined;
  /** Endpoints held at once (default 64). */
  maxEndpoints?: number;
  /** How long a leased endpoint's loop waits before looking for new due deliveries while attempts run (ms). */
  pollMs?: number;
  /** What is done with an error the runner goes on after (the store unreachable for a while); logged by default. */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * An endpoint's window at its lease: attempts at once before any has answered. Each answer in time widens it by one
 * (it doubles each round of answers, to `perEndpoint`), a timeout closes it to one: an endpoint not known to hang
 * that does holds this many slots for one attempt limit, then one (the slow lane), whatever `perEndpoint` is.
 */
export const INITIAL_WINDOW = 2;
