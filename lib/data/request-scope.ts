import { AsyncLocalStorage } from 'node:async_hooks';
import { nowMillis } from '#lib/time.ts';
import type { RateScope } from './rate-limit.ts';

/**
 * What the data layer knows of the request it serves: the one per-request state below the HTTP stack.
 * The HTTP stack runs each request inside its scope (lib/http/handler.ts) and fills it as it goes; the data
 * layer reads it where a store call depends on the request:
 * - `deadline`: every store call gets what is left of it (lib/data/client.ts), and so does the work after a
 *   failure (a conflict retry, releasing an Idempotency-Key); past it, the request answers 503;
 * - `rate`: the request's rate count, which every write waits for (lib/data/rate-limit.ts).
 * Outside a request (the admin CLI, the reindex, tests calling the data layer directly) there is no scope:
 * no deadline beyond each call's own bounds, and no rate count.
 */
export interface RequestScope {
  /** Epoch milliseconds by which the request's store calls must have ended. */
  readonly deadline: number;
  /** The request's rate count, once the HTTP stack opened it (requests past authentication). */
  rate?: RateScope;
  /** Set inside rateExempt(): this write is the rate decision itself, or must not wait for it. */
  readonly rateExempt?: true;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** Runs one request's work inside its scope. */
export function runInRequestScope<T>(scope: RequestScope, work: () => Promise<T>): Promise<T> {
  return storage.run(scope, work);
}

/** The scope of the request being served, if any. */
export const requestScope = (): RequestScope | undefined => storage.getStore();

/** Runs `work` in a child of the current scope (same deadline, same rate count) with `rateExempt` set. */
export function inExemptScope<T>(work: () => Promise<T>): Promise<T> {
  const scope = storage.getStore();
  return scope ? storage.run(Object.assign(Object.create(scope), { rateExempt: true }), work) : work();
}

/** Milliseconds left until the request's deadline (Infinity outside a request). */
export function timeLeftMs(): number {
  const scope = storage.getStore();
  return scope ? scope.deadline - nowMillis() : Number.POSITIVE_INFINITY;
}
