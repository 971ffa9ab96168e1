import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { dynamo } from '#lib/data/store/client.ts';

/**
 * Fault injection on the service's own DynamoDB client (the local gateway runs the handlers in this process):
 * counts every call, and fails the Nth one the way a network or a dying store fails it.
 * - `lost-request`: the call never reaches the store (connection reset before sending).
 * - `lost-answer`: the store does the work, then the answer is lost (a timeout reading the response), so
 *   a write may have landed although the caller saw an error.
 * - `conflict`: the store refuses the call because a transaction holds one of its items
 *   (TransactionConflictException, which DynamoDB raises for a plain write too).
 * - `refused`: the store refuses the request as invalid whatever is tried again (an item over 400 KB, a key over
 *   its limit: ValidationException), as it refuses a write of something that can never be stored.
 * It sits inside the service's error mapping and outside the SDK's retries: the injected failure is final.
 */
export type FaultMode = 'lost-request' | 'lost-answer' | 'conflict' | 'refused';

/**
 * The call that fails: the `at`th of the work, or the first of `operation` (`TransactWriteItems`); with `after`,
 * the first of `operation` once a call of `after` was made (`UpdateItem` after the `TransactWriteItems`); with
 * `times`, the first `times` calls of `operation` in a row (a hot item's losing streak).
 */
type Plan = (
  | { at: number; operation?: undefined; after?: undefined; times?: undefined }
  | { at?: undefined; operation: string; after?: string; times?: number }
) & {
  mode: FaultMode;
};

/**
 * One `withFault` run: its calls counted and its plan, in an AsyncLocalStorage, so that runs at once (a sweep's
 * positions, each on its own account) each count and fail their own calls only. A request through the local
 * gateway is served in the server's async context, not the caller's: the client sends the run's request id
 * (faultRequestHeaders) and the function's handler enters the run again (inFaultScopeOfRequest).
 */
interface FaultRun {
  calls: number;
  plan: Plan | undefined;
  operations: string[];
  requestIds: string[];
  /** A call of the plan's `after` was made. */
  afterSeen: boolean;
}

const runs = new AsyncLocalStorage<FaultRun>();
const runOfRequest = new Map<string, FaultRun>();
let installed = false;

function injectedError(mode: FaultMode): Error {
  if (mode === 'refused') {
    return Object.assign(new Error('Item size has exceeded the maximum allowed size (injected)'), {
      name: 'ValidationException',
      $metadata: { httpStatusCode: 400 },
    });
  }
  if (mode === 'conflict') {
    return Object.assign(new Error('Transaction is ongoing for the item (injected)'), {
      name: 'TransactionConflictException',
      $metadata: { httpStatusCode: 400 },
    });
  }
  return mode === 'lost-request'
    ? Object.assign(new Error('socket hang up (injected)'), { code: 'ECONNRESET' })
    : Object.assign(new Error('response timed out (injected)'), { name: 'TimeoutError' });
}

function install(): void {
  if (installed) return;
  installed = true;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const run = runs.getStore();
      if (!run) return next(args);
      const n = ++run.calls;
      const operation = String(context.commandName).replace(/Command$/, '');
      run.operations.push(operation);
      const { plan } = run;
      if (plan?.after === operation) run.afterSeen = true;
      const failing =
        plan &&
        (plan.operation ? plan.operation === operation && (!plan.after || run.afterSeen) : plan.at === n);
      if (!plan || !failing) return next(args);
      const { mode } = plan;
      // An operation's first call only (its first `times`): the calls after it run as they would.
      if (plan.operation)
        run.plan = (plan.times ?? 1) > 1 ? { ...plan, times: (plan.times ?? 1) - 1 } : undefined;
      if (mode !== 'lost-answer') throw injectedError(mode);
      await next(args);
      throw injectedError(mode);
    },
    { step: 'initialize', name: 'injectedFaults', priority: 'low' },
  );
}

/**
 * Runs `work` counting its DynamoDB calls (those of the requests it sends through the local gateway included);
 * with `fail`, the call at that position (or of that operation) fails. Runs at once count apart.
 */
export async function withFault<T>(
  fail: Plan | undefined,
  work: () => Promise<T>,
): Promise<{ result: T; operations: string[] }> {
  install();
  const run: FaultRun = { calls: 0, plan: fail, operations: [], requestIds: [], afterSeen: false };
  try {
    const result = await runs.run(run, work);
    return { result, operations: run.operations };
  } finally {
    run.plan = undefined;
    for (const id of run.requestIds) runOfRequest.delete(id);
  }
}

/** Headers a request to the local gateway carries inside a `withFault` run (none outside one): its request id. */
export function faultRequestHeaders(given: Record<string, string>): Record<string, string> {
  const run = runs.getStore();
  if (!run) return {};
  const id =
    Object.entries(given).find(([name]) => name.toLowerCase() === 'x-request-id')?.[1] ??
    `fault-${randomBytes(8).toString('hex')}`;
  run.requestIds.push(id);
  runOfRequest.set(id, run);
  return { 'X-Request-Id': id };
}

/**
 * A function's handler that serves a request sent inside a `withFault` run in that run (its context's request id
 * is the one the client sent: the gateway passes it on, to the authorizer too); any other call as it is.
 */
export function inFaultScopeOfRequest<A extends unknown[], R>(handler: (...args: A) => R) {
  return (...args: A): R => {
    const requestId = (args[1] as { awsRequestId?: unknown } | undefined)?.awsRequestId;
    const run = typeof requestId === 'string' ? runOfRequest.get(requestId) : undefined;
    return run ? runs.run(run, () => handler(...args)) : handler(...args);
  };
}

/** The longest run of one operation whose every call a sweep fails (representativePositions). */
const WHOLE_RUN = 4;

/**
 * The call positions (from 1) a sweep fails: every one, except inside a run of more than WHOLE_RUN calls in a row of
 * one operation, of which the first two, the middle one and the last are failed. Such a run is one call made for many
 * items side by side (a heavy create's block keys, one UpdateItem a custom field, sent together before its commit):
 * failing each of them repeats one case on another item, at a create, a retry and two rounds of views a position.
 */
export function representativePositions(operations: readonly string[]): number[] {
  const kept: number[] = [];
  for (let start = 0; start < operations.length; ) {
    let end = start;
    while (operations[end + 1] === operations[start]) end++;
    const length = end - start + 1;
    const picked =
      length <= WHOLE_RUN
        ? Array.from({ length }, (_, i) => start + i)
        : [start, start + 1, start + Math.floor(length / 2), end];
    kept.push(...picked.map((i) => i + 1));
    start = end + 1;
  }
  return kept;
}

/**
 * Call positions of a sweep at once: each on an account of its own, and each `withFault` run counts and fails its
 * own calls only, so positions need not wait for each other. A few, not all: on 2 cores more only queue.
 */
export const SWEEP_CONCURRENCY = 4;

/**
 * Runs `check` for every position, `concurrency` at once (each makes its own account and asserts on it alone).
 * After a failure no position starts; the first failure is thrown once those running have ended.
 */
export async function sweepPositions<P>(
  positions: readonly P[],
  check: (position: P) => Promise<void>,
  concurrency = SWEEP_CONCURRENCY,
): Promise<void> {
  const failures: unknown[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < positions.length && failures.length === 0; i = next++) {
      try {
        await check(positions[i] as P);
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, positions.length) }, worker));
  if (failures.length > 0) throw failures[0];
}
