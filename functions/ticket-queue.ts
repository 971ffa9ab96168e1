import type { Context } from 'aws-lambda';
import { QUEUE_RUN_MS } from '#functions/workers.ts';
import { workerHandler } from '#lib/log.ts';
import { runQueue } from '#lib/tickets/queue-runner.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The queue runner deployed (decisions.md, "People": an agent who frees up takes the queue's next ticket within
 * 60 seconds): scheduled every minute (infra/constructs/scheduled-runner.ts), it runs the passes `npm start`'s
 * runner runs (lib/tickets/queue-runner.ts) for up to QUEUE_RUN_MS (less when the function has less time left),
 * polling every 2 s meanwhile. Runs may overlap and die anywhere: every hand-over is its own commit guarded by the
 * ticket's version and the agent's cell, and a freed entry stays until its agent was served.
 */
export const handler = workerHandler('ticket queue run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? QUEUE_RUN_MS + 30_000;
  const runFor = Math.max(0, Math.min(QUEUE_RUN_MS, left - 30_000));
  const totals = await runQueue(nowMillis() + runFor);
  return { answer: undefined, figures: { ...totals, runMs: runFor } };
});
