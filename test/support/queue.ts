import { dynamo } from '#lib/data/store/client.ts';
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

let recording: { accountId: string; asked: Set<string> } | undefined;
let installed = false;

/**
 * The queues of the account whose heads `work` read (their `waiting` values: a team id, `none`), from the Queries of
 * their `sort=queue` postings on the service's client (lib/data/index/list-sorted.ts, one a head).
 */
export async function queuesAsked(accountId: string, work: () => Promise<unknown>): Promise<Set<string>> {
  if (!installed) {
    installed = true;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input?: { ExpressionAttributeValues?: Record<string, unknown> } }).input;
        const pk = input?.ExpressionAttributeValues?.[':pk'];
        const now = recording;
        if (now && context.commandName === 'QueryCommand' && typeof pk === 'string') {
          const prefix = `_SORTED#${now.accountId}#queue#waiting#`;
          const at = pk.indexOf(prefix);
          if (at >= 0) now.asked.add(pk.slice(at + prefix.length));
        }
        return next(args);
      },
      { step: 'initialize', name: 'queuesAsked', priority: 'low' },
    );
  }
  recording = { accountId, asked: new Set() };
  try {
    await work();
    return recording.asked;
  } finally {
    recording = undefined;
  }
}
