import { AsyncLocalStorage } from 'node:async_hooks';
import { nowMillis } from './time.ts';

/**
 * The one state of the invocation being served that code below its entry reads without being handed it
 * (docs/architecture.md, "The HTTP stack"). The HTTP stack runs each request inside its scope
 * (lib/http/context.ts, inRequestScope), the authorizer and the background functions each invocation
 * (lib/log.ts, inInvocationScope); what runs inside it reads:
 * - `deadline`: every store call gets what is left of it (lib/data/store/client.ts), and so does the work after a
 *   failure (a conflict retry, releasing an Idempotency-Key); past it, the request answers 503;
 * - `rate`: the request's rate count, which every write waits for (lib/data/requests/rate-limit.ts);
 * - `log`: the keys on each of its log lines (lib/log.ts).
 * One AsyncLocalStorage, so invocations served at once in one process (the local gateway, tests) each see their
 * own: nothing of a request is kept in a module. Outside any (the admin CLI, the reindex, tests calling the data
 * layer directly) there is no scope: no deadline beyond each call's own bounds, no rate count, no log keys.
 */
export interface RequestScope {
  /** Epoch milliseconds by which the request's store calls must have ended (an HTTP request's only). */
  readonly deadline?: number;
  /** The request's rate count, once the HTTP stack opened it (requests past authentication). */
  rate?: RateCount;
  /** Set inside inExemptScope(): this write is the rate decision itself, or must not wait for it. */
  readonly rateExempt?: true;
  /** The keys on every log line of the invocation (lib/log.ts, invocationLogKeys). */
  readonly log?: LogKeys;
}

/**
 * The request's rate count as the scope holds it: the decision under way. Its full type is the data layer's
 * (lib/data/requests/rate-limit.ts, RateScope, which reads it back): the scope depends on nothing it carries.
 */
export interface RateCount {
  readonly eager: Promise<{ readonly allowed: boolean }>;
}

/** Fields of a log line: an invocation's ids (requestId, accountId, route) and Lambda's own (lib/log.ts). */
export type LogKeys = Readonly<Record<string, string | number | boolean | undefined>>;

const storage = new AsyncLocalStorage<RequestScope>();

/** Runs one invocation's work inside its scope. */
export function runInRequestScope<T>(scope: RequestScope, work: () => Promise<T>): Promise<T> {
  return storage.run(scope, work);
}

/** The scope of the invocation being served, if any. */
export const requestScope = (): RequestScope | undefined => storage.getStore();

/** Runs `work` in a child of the current scope (same deadline, rate count and log keys) with `rateExempt` set. */
export function inExemptScope<T>(work: () => Promise<T>): Promise<T> {
  const scope = storage.getStore();
  return scope ? storage.run(Object.assign(Object.create(scope), { rateExempt: true }), work) : work();
}

/** Milliseconds left until the request's deadline (Infinity without one). */
export function timeLeftMs(): number {
  const deadline = storage.getStore()?.deadline;
  return deadline === undefined ? Number.POSITIVE_INFINITY : deadline - nowMillis();
}
