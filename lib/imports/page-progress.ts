import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { saveProgress } from '#lib/data/imports/progress.ts';
import { logError } from '#lib/log.ts';
import { every } from '#lib/time.ts';

/**
 * Progress within a page of tickets (decisions.md: `progress` "moves at least every 5 seconds while running";
 * docs/imports.md, "The engine"). A page of the ticket phase can take a minute (a Zendesk page is ~100 requests for
 * comments at the source's pace) or more (500 ndjson tickets written at ~35 a second), and the checkpoint, the counts
 * and `progress` move only with its save. So while it runs, `progress.done` moves by itself: a ticket counts half
 * when the source has been read for it (its conversation fetched) and half when it is written (or decided, in a
 * validate run), and every PROGRESS_SAVE_MS of the job's clock, when that moved, `done` is saved alone, at the
 * job's revision and under the runner's lease, without moving the revision (saveProgress). It is display only: the
 * checkpoint and counts stay per page, a page read again after a crash counts from the job's saved counts (never
 * from a `done` saved within it), and the page's own save sets `done` to the counted tickets, which is never less.
 */

/** Less than the contract's 5 s: the save's own round trip and a step's boundary fit in the rest. */
export const PROGRESS_SAVE_MS = 4_000;

export interface PageProgress {
  /** A ticket of the page read from the source. */
  read: () => void;
  /** A ticket of the page written (or decided). */
  written: () => void;
  /** Stops the saves, once the last one under way has landed. */
  stop: () => Promise<void>;
}

export function pageProgress(
  job: ImportJob,
  owner: string,
  shown?: (progress: ImportJob['progress']) => void,
): PageProgress {
  const base = job.counts.tickets?.source ?? 0;
  let saved = job.progress.done;
  let [read, written] = [0, 0];
  let landing: Promise<void> = Promise.resolve();
  const stopped = new AbortController();
  every(PROGRESS_SAVE_MS, stopped.signal, () => {
    const done = base + Math.floor((read + written) / 2);
    if (done <= saved) return;
    saved = done;
    const progress = { done, total: job.progress.total };
    landing = landing
      .then(() => saveProgress(job, owner, progress))
      .then((moved) => {
        if (moved) shown?.(progress);
      }, logError);
  });
  return {
    read: () => {
      read++;
    },
    written: () => {
      written++;
    },
    stop: async () => {
      stopped.abort();
      await landing;
    },
  };
}
