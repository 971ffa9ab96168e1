import { randomBytes } from 'node:crypto';
import { ALL_DUE_SHARDS, type DueCursors } from '#lib/data/index/due.ts';
import { dueOutbox, type OutboxEntry, releaseOwnClaims } from '#lib/data/outbox.ts';
import { fairShare } from '#lib/fair-share.ts';
import { logError } from '#lib/log.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { emailSendRate, SendPace } from './pace.ts';
import { OUTBOX_CLAIM_MS, type OutboxRunOptions, type SendOutcome, sendOne } from './send.ts';

/**
 * The outbox runner's passes: a window of the mail due read, a batch of it shared between the accounts due
 * (fairShare), sent a few at once at the pace of the sending quota (pace.ts), and passes again while more is due.
 */

export interface OutboxPass {
  read: number;
  counts: Record<SendOutcome, number>;
  /** More was due than one pass serves. */
  more: boolean;
}

/**
 * A send's time budget to the provider (SES's p99 of a SendEmail, with room): to keep up the quota's rate, rate ×
 * this many sends are in flight.
 */
const SEND_BUDGET_SECONDS = 0.5;

/**
 * Mails sent at once at a sending quota of `ratePerSecond` (undefined: unpaced): enough in flight to reach the quota
 * when each send takes SEND_BUDGET_SECONDS (8 at least, as before the pace; 64 at most, a function's sockets).
 */
export function outboxConcurrency(ratePerSecond: number | undefined): number {
  if (ratePerSecond === undefined) return 8;
  return Math.min(64, Math.max(8, Math.ceil(ratePerSecond * SEND_BUDGET_SECONDS)));
}

const zeroCounts = (): Record<SendOutcome, number> => ({
  sent: 0,
  retrying: 0,
  failed: 0,
  skipped: 0,
  throttled: 0,
});

/**
 * One pass: a window of the mail due now (a page a due shard), `limit` of it served round-robin across the
 * accounts (one account's mass mailing leaves every other account its share of the batch), each claimed, sent
 * and recorded.
 */
export async function outboxPass(options: OutboxRunOptions): Promise<OutboxPass> {
  const concurrency = options.concurrency ?? outboxConcurrency(options.pace?.ratePerSecond);
  const limit = options.limit ?? Math.max(50, 4 * concurrency);
  const owner = options.owner ?? `outbox-${randomBytes(6).toString('hex')}`;
  const window = await dueOutbox(
    nowMillis(),
    options.shards ?? ALL_DUE_SHARDS,
    options.cursors ?? new Map(),
    options.windowPerShard,
  );
  const due = fairShare(window.entries, (entry) => entry.accountId, limit);
  const counts = zeroCounts();
  let next = 0;
  let ended = false;
  const work = async () => {
    for (let i = next++; i < due.length && !ended; i = next++) {
      const entry = due[i] as OutboxEntry;
      try {
        const outcome = await sendOne(entry, { ...options, owner });
        // The run ends before the pace would let this one go: it and the rest stay due for the next run.
        if (outcome === undefined) ended = true;
        else counts[outcome]++;
      } catch (error) {
        // The store failed the claim, a read or the record: the entry stays, due again when its claim ends.
        (options.onError ?? logError)(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, work));
  // Again at once only when more was due than this pass served and it did something with it: a page of mail
  // another runner holds (its claims) waits for the next poll, not a busy loop.
  const left = window.more || window.entries.length > due.length;
  return { read: due.length, counts, more: left && !ended && counts.skipped < due.length };
}

async function releaseOwnClaimsOf(options: OutboxRunOptions & { owner: string }): Promise<void> {
  const now = nowMillis();
  const claimMs = options.claimMs ?? OUTBOX_CLAIM_MS;
  await releaseOwnClaims(options.owner, now, now + claimMs, options.shards ?? ALL_DUE_SHARDS).catch(
    options.onError ?? logError,
  );
}

/**
 * Passes until `until` or `stopped()`: at once again while more is due, else every `pollMs` (default 250). One pace
 * for the run (EMAIL_SEND_RATE unless `pace` is given) and one place in the due index, from pass to pass.
 */
export async function runOutbox(
  until: number,
  options: OutboxRunOptions & { pollMs?: number; stopped?: () => boolean },
): Promise<Record<SendOutcome, number>> {
  const totals = zeroCounts();
  const owner = options.owner ?? `outbox-${randomBytes(6).toString('hex')}`;
  const pace = options.pace ?? new SendPace(emailSendRate());
  const cursors: DueCursors = options.cursors ?? new Map();
  // A runner with a lasting name (npm start's, after its data folder) takes back at once what it claimed before a
  // crash, not when those claims end (releaseOwnClaims).
  if (options.owner) await releaseOwnClaimsOf({ ...options, owner: options.owner });
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await outboxPass({ ...options, owner, pace, cursors, until });
      for (const k of Object.keys(totals) as SendOutcome[]) totals[k] += pass.counts[k];
      more = pass.more;
    } catch (error) {
      (options.onError ?? logError)(error);
    }
    if (!more) await sleep(Math.min(options.pollMs ?? 250, Math.max(0, until - nowMillis())));
  }
  return totals;
}
