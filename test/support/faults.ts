import { dynamo } from '#lib/data/client.ts';

/**
 * Fault injection on the service's own DynamoDB client (the local gateway runs the handlers in this process):
 * counts every call, and fails the Nth one the way a network or a dying store fails it.
 * - `lost-request`: the call never reaches the store (connection reset before sending).
 * - `lost-answer`: the store does the work, then the answer is lost (a timeout reading the response), so
 *   a write may have landed although the caller saw an error.
 * - `conflict`: the store refuses the call because a transaction holds one of its items
 *   (TransactionConflictException, which DynamoDB raises for a plain write too).
 * It sits inside the service's error mapping and outside the SDK's retries: the injected failure is final.
 */
export type FaultMode = 'lost-request' | 'lost-answer' | 'conflict';

interface Plan {
  at: number;
  mode: FaultMode;
}

let calls = 0;
let plan: Plan | undefined;
let operations: string[] = [];
let installed = false;

function injectedError(mode: FaultMode): Error {
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
      operations.push(String(context.commandName).replace(/Command$/, ''));
      if (plan?.at !== n) return next(args);
      if (plan.mode !== 'lost-answer') throw injectedError(plan.mode);
      await next(args);
      throw injectedError(plan.mode);
    },
    { step: 'initialize', name: 'injectedFaults', priority: 'low' },
  );
}

/** Runs `work` counting its DynamoDB calls; with `fail`, the call at that position fails. */
export async function withFault<T>(
  fail: Plan | undefined,
  work: () => Promise<T>,
): Promise<{ result: T; operations: string[] }> {
  install();
  calls = 0;
  operations = [];
  plan = fail;
  try {
    const result = await work();
    return { result, operations };
  } finally {
    plan = undefined;
  }
}
