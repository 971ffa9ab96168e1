import { fairShare } from './fair-share.ts';
import { logError } from './log.ts';

/**
 * One pass of a runner over a window of its due index (the organization clearings, the hand-backs): `batch` of the
 * due entries shared round-robin by account (fairShare), all at once; `work` takes an entry's bounded steps and
 * answers `more` when it stopped with steps to go. A failure is logged and the entry postponed: the next pass goes
 * on from what the store holds. `more` when anything is left to do now (the next pass starts at once).
 */
export async function duePass<E extends { accountId: string }>(
  window: { entries: E[]; more: boolean },
  batch: number,
  how: { work: (entry: E) => Promise<'done' | 'more'>; postpone: (entry: E) => Promise<void> },
): Promise<{ done: number; failed: number; more: boolean }> {
  const due = fairShare(window.entries, (entry) => entry.accountId, batch);
  let done = 0;
  let failed = 0;
  let more = window.more || window.entries.length > due.length;
  await Promise.all(
    due.map(async (entry) => {
      try {
        if ((await how.work(entry)) === 'more') more = true;
        else done++;
      } catch (error) {
        failed++;
        logError(error);
        await how.postpone(entry).catch(logError);
      }
    }),
  );
  return { done, failed, more };
}
