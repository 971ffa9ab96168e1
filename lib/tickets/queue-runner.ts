import type { DueCursors } from '#lib/data/index/due.ts';
import { dueFreedWindow, postponeFreed } from '#lib/data/tickets/freed.ts';
import { fairShare } from '#lib/fair-share.ts';
import { logError } from '#lib/log.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { serveFreed } from './queue.ts';
import { serveWake } from './team-wake.ts';

/**
 * The queue runner (decisions.md, "People": a freed agent takes the queue's next ticket within 60 seconds): passes
 * over the freed entries due (gsi2 `QUEUE_FREED_DUE#<shard>`, never a Scan), QUEUE_BATCH of them a pass shared
 * round-robin by account (fairShare), each agent served in turn (./queue.ts, serveFreed), and the account's team
 * wake, when a change left teams with no active agent (./team-wake.ts, serveWake). A turn that fails moves
 * its entry RETRY_MS on, and that pass serves the agent again from what the store holds. `npm start` runs it beside the breach
 * runner; deployed, a scheduled worker runs it every minute (functions/workers.ts).
 */
export const QUEUE_POLL_MS = 2_000;
const QUEUE_BATCH = 20;
/** How far a failed turn moves its entry on. */
const RETRY_MS = 5_000;

/** One pass; `more` when more was due than the batch (the next pass starts at once). */
export async function queuePass(
  options: { cursors?: DueCursors } = {},
): Promise<{ assigned: number; failed: number; more: boolean }> {
  const window = await dueFreedWindow(nowMillis(), options.cursors ?? new Map());
  const due = fairShare(window.entries, (entry) => entry.accountId, QUEUE_BATCH);
  let assigned = 0;
  let failed = 0;
  // Agents of one account are served one after the other (they may draw from the same queue head); accounts at once.
  // The account's team wake after its agents' turns, whatever their due times: an agent a change's hand-back freed
  // takes the head of their queues (the most urgent), as when the wake ran before the hand-back, which the runners'
  // timing may give as well; served first, the wake could hand the agent back the very ticket they left.
  const byAccount = new Map<string, typeof due>();
  for (const entry of due) byAccount.set(entry.accountId, [...(byAccount.get(entry.accountId) ?? []), entry]);
  for (const entries of byAccount.values()) {
    entries.sort((a, b) => Number(a.agentId === null) - Number(b.agentId === null));
  }
  await Promise.all(
    [...byAccount.values()].map(async (entries) => {
      for (const entry of entries) {
        try {
          const { agentId } = entry;
          assigned += await (agentId === null ? serveWake(entry) : serveFreed({ ...entry, agentId }));
        } catch (error) {
          failed++;
          logError(error);
          await postponeFreed(entry, nowMillis() + RETRY_MS).catch(logError);
        }
      }
    }),
  );
  return { assigned, failed, more: window.more || window.entries.length > due.length };
}

/** Passes until `until` (epoch ms) or until `stopped()`; with `untilDrained`, also once nothing is due. */
export async function runQueue(
  until: number,
  options: { pollMs?: number; stopped?: () => boolean; untilDrained?: boolean } = {},
): Promise<{ passes: number; assigned: number }> {
  const totals = { passes: 0, assigned: 0 };
  const cursors: DueCursors = new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await queuePass({ cursors });
      totals.passes++;
      totals.assigned += pass.assigned;
      more = pass.more;
    } catch (error) {
      logError(error);
    }
    if (!more && options.untilDrained) break;
    if (!more) {
      const end = nowMillis() + Math.min(options.pollMs ?? QUEUE_POLL_MS, Math.max(0, until - nowMillis()));
      while (nowMillis() < end && !options.stopped?.()) await sleep(Math.min(500, end - nowMillis()));
    }
  }
  return totals;
}
