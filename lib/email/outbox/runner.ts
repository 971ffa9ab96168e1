import { randomBytes } from 'node:crypto';
import { dueOutbox, type OutboxEntry } from '#lib/data/outbox.ts';
import { logError } from '#lib/log.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { type OutboxRunOptions, type SendOutcome, sendOne } from './send.ts';

/** The outbox runner's passes: the mail due read, sent a few at once, and passes again while more is due. */

export interface OutboxPass {
  read: number;
  counts: Record<SendOutcome, number>;
  /** More was due than one pass reads. */
  more: boolean;
}

/** One pass: the mail due now, each claimed, sent and recorded. */
export async function outboxPass(options: OutboxRunOptions): Promise<OutboxPass> {
  const limit = options.limit ?? 50;
  const owner = options.owner ?? `outbox-${randomBytes(6).toString('hex')}`;
  const due = await dueOutbox(nowMillis(), limit, options.shards);
  const counts: Record<SendOutcome, number> = { sent: 0, retrying: 0, failed: 0, skipped: 0 };
  let next = 0;
  const work = async () => {
    for (let i = next++; i < due.length; i = next++) {
      const entry = due[i] as OutboxEntry;
      try {
        counts[await sendOne(entry, { ...options, owner })]++;
      } catch (error) {
        // The store failed the claim, a read or the record: the entry stays, due again when its claim ends.
        (options.onError ?? logError)(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 8, due.length) }, work));
  // Again at once only when a full page was due and this pass did something with it: a page of mail another
  // runner holds (its claims) waits for the next poll, not a busy loop.
  return { read: due.length, counts, more: due.length >= limit && counts.skipped < due.length };
}

/** Passes until `until` or `stopped()`: at once again while more is due, else every `pollMs` (default 250). */
export async function runOutbox(
  until: number,
  options: OutboxRunOptions & { pollMs?: number; stopped?: () => boolean },
): Promise<Record<SendOutcome, number>> {
  const totals: Record<SendOutcome, number> = { sent: 0, retrying: 0, failed: 0, skipped: 0 };
  const owner = options.owner ?? `outbox-${randomBytes(6).toString('hex')}`;
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await outboxPass({ ...options, owner });
      for (const k of Object.keys(totals) as SendOutcome[]) totals[k] += pass.counts[k];
      more = pass.more;
    } catch (error) {
      (options.onError ?? logError)(error);
    }
    if (!more) await sleep(Math.min(options.pollMs ?? 250, Math.max(0, until - nowMillis())));
  }
  return totals;
}
