import type { DueCursors } from '#lib/data/index/due.ts';
import type { MailPurger } from '#lib/data/mail-store.ts';
import { duePurgeWindow, purgeOne } from '#lib/data/trash/purge.ts';
import { fairShare } from '#lib/fair-share.ts';
import { logError } from '#lib/log.ts';
import { nowMicros, nowMillis, sleep } from '#lib/time.ts';

/**
 * The purge runner (docs/decisions.md, "Deleting, restoring and the trash"): passes over the trash's purge due
 * entries (never a Scan), each purging up to PURGE_BATCH due objects, a few at a time; what fails stays due and is
 * tried again by the next pass. `npm start` runs it for as long as it runs. `mail`: where the account's copies of
 * received mail are kept (the folder, the bucket), removed with their ticket.
 */
export const PURGE_POLL_MS = 60_000;
const PURGE_BATCH = 100;
const AT_ONCE = 4;

/**
 * One pass: a window of the due objects (a page a due shard, from where the run's last window ended: `cursors`),
 * PURGE_BATCH of them shared round-robin between their accounts (fairShare: one account's mass deletion leaves
 * every other account's purges their share), purged; `more` when more was due (the next pass starts at once).
 */
export async function purgePass(
  options: { mail?: MailPurger | undefined; cursors?: DueCursors } = {},
): Promise<{ purged: number; failed: number; more: boolean }> {
  const now = nowMicros();
  const window = await duePurgeWindow(Math.floor(now / 1000), options.cursors ?? new Map());
  const due = fairShare(window.entries, (entry) => entry.accountId, PURGE_BATCH);
  let purged = 0;
  let failed = 0;
  for (let i = 0; i < due.length; i += AT_ONCE) {
    await Promise.all(
      due.slice(i, i + AT_ONCE).map(async ({ accountId, uuid }) => {
        try {
          if ((await purgeOne(accountId, uuid, now, options.mail)) !== undefined) purged++;
        } catch (error) {
          failed++;
          logError(error);
        }
      }),
    );
  }
  return { purged, failed, more: window.more || window.entries.length > due.length };
}

/**
 * Passes until `until` (epoch ms) or until `stopped()`; with `untilDrained` (the deployed scheduled function) also
 * stops after the first pass that leaves nothing due, rather than waiting for the next poll: the schedule is the poll.
 */
export async function runPurges(
  until: number,
  options: {
    pollMs?: number;
    stopped?: () => boolean;
    untilDrained?: boolean;
    mail?: MailPurger | undefined;
  } = {},
): Promise<{ passes: number; purged: number; failed: number }> {
  const totals = { passes: 0, purged: 0, failed: 0 };
  // The run's place in the due index, from one pass to the next: a backlog is read a page further each pass.
  const cursors: DueCursors = new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await purgePass({ ...options, cursors });
      totals.passes++;
      totals.purged += pass.purged;
      totals.failed += pass.failed;
      more = pass.more;
    } catch (error) {
      totals.failed++;
      logError(error);
    }
    if (!more && options.untilDrained) break;
    if (!more) {
      // Sleep in short steps, so that stopping is prompt.
      const end = nowMillis() + Math.min(options.pollMs ?? PURGE_POLL_MS, Math.max(0, until - nowMillis()));
      while (nowMillis() < end && !options.stopped?.()) await sleep(Math.min(500, end - nowMillis()));
    }
  }
  return totals;
}
