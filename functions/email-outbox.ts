import type { Context } from 'aws-lambda';
import { requireEnv } from '#lib/config/env.ts';
import { runOutbox } from '#lib/email/outbox.ts';
import { sesSender } from '#lib/email/senders.ts';
import { workerHandler } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The outbox deployed (docs/email.md, "Sending"): run every minute by a schedule, it runs the outbox runner for
 * OUTBOX_RUN_MS (less when the function has less time left than that and a send), sending through SES v2 with
 * the stage's configuration set (SES_CONFIGURATION_SET). Runs may overlap by their tails and a run may die at any
 * point: claims keep two runs off one mail, and a mail whose claim ran out is sent again with its Message-ID.
 */
export const OUTBOX_RUN_MS = 50_000;

const sender = sesSender(requireEnv('SES_CONFIGURATION_SET'));

export const handler = workerHandler('email outbox run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? OUTBOX_RUN_MS + 40_000;
  const runFor = Math.max(0, Math.min(OUTBOX_RUN_MS, left - 40_000));
  const totals = await runOutbox(nowMillis() + runFor, { sender });
  return { answer: undefined, figures: { ...totals, runMs: runFor } };
});
