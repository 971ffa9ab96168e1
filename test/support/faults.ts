import { dynamo } from '#lib/data/client.ts';

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
 * the first of `operation` once a call of `after` was made (`UpdateItem` after the `TransactWriteItems`).
 */
type Plan = (
  | { at: number; operation?: undefined; after?: undefined }
  | { at?: undefined; operation: string; after?: string }
) & {
  mode: FaultMode;
};

let calls = 0;
let plan: Plan | undefined;
/** A call of the plan's `after` was made. */
let afterSeen = false;
let operations: string[] = [];
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
      const n = ++calls;
      const operation = String(context.commandName).replace(/Command$/, '');
      operations.push(operation);
      if (plan?.after === operation) afterSeen = true;
      const failing =
        plan && (plan.operation ? plan.operation === operation && (!plan.after || afterSeen) : plan.at === n);
      if (!plan || !failing) return next(args);
      const { mode } = plan;
      // An operation's first call only: the calls after it run as they would.
      if (plan.operation) plan = undefined;
      if (mode !== 'lost-answer') throw injectedError(mode);
      await next(args);
      throw injectedError(mode);
    },
    { step: 'initialize', name: 'injectedFaults', priority: 'low' },
  );
}

/** Runs `work` counting its DynamoDB calls; with `fail`, the call at that position (or of that operation) fails. */
export async function withFault<T>(
  fail: Plan | undefined,
  work: () => Promise<T>,
): Promise<{ result: T; operations: string[] }> {
  install();
  calls = 0;
  operations = [];
  afterSeen = false;
  plan = fail;
  try {
    const result = await work();
    return { result, operations };
  } finally {
    plan = undefined;
  }
}
