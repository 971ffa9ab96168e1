import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { claimJob, dueImportWindow, releaseJob, renewLease } from '#lib/data/imports/runs.ts';
import type { DueCursors } from '#lib/data/index/due.ts';
import { duePass } from '#lib/due-pass.ts';
import { logError } from '#lib/log.ts';
import { every, nowMillis, sleep } from '#lib/time.ts';
import { readerFor, runImportStep } from './engine.ts';
import type { ImportWriters } from './writers.ts';

/**
 * The import runner (docs/imports.md, "The runner"): passes over the due jobs (gsi2 `IMPORT_DUE#<shard>`, never a
 * Scan), IMPORT_BATCH of them a pass shared round-robin by account. Each is claimed for LEASE_MS (its due entry
 * moved to the lease's end), then stepped (./engine.ts: a page each) for up to `jobMs`, each save extending the
 * lease, and a heartbeat every 20 s extending it during a long page; then released, due again at once. A runner that dies leaves the job due when its lease runs out, and the
 * next runner reads on from the checkpoint. A step that throws (the store, a writer) leaves the job claimed and due
 * RETRY_MS on (the same runner takes it back then; another once the lease has run out).
 */
export const IMPORT_POLL_MS = 2_000;
export const LEASE_MS = 60_000;
const HEARTBEAT_MS = 20_000;
const IMPORT_BATCH = 4;
const JOB_MS = 20_000;
const RETRY_MS = 5_000;

export interface ImportRunOptions {
  /** Who holds the leases: one name per runner (a crashed `npm start` takes its own back at once). */
  owner: string;
  cursors?: DueCursors;
  writers?: ImportWriters;
  /** How long a pass steps one job before it releases it (a bounded share for every due job). */
  jobMs?: number;
  /** Steps a job takes at most in a pass (tests: a run cut short). */
  stepsPerJob?: number;
}

/** One pass; `more` when a job still has steps to go or more was due (the next pass starts at once). */
export async function importPass(
  options: ImportRunOptions,
): Promise<{ ended: number; failed: number; more: boolean }> {
  const window = await dueImportWindow(nowMillis(), options.cursors ?? new Map());
  const pass = await duePass(window, IMPORT_BATCH, {
    work: async ({ accountId, id }) => {
      const job = await claimJob(accountId, id, options.owner, nowMillis() + LEASE_MS, nowMillis());
      if (!job) return 'done';
      return stepJob(job, options);
    },
    postpone: async ({ accountId, id }) => {
      const job = await claimJob(accountId, id, options.owner, nowMillis() + LEASE_MS, nowMillis());
      if (job) await releaseJob(job, options.owner, nowMillis() + RETRY_MS);
    },
  });
  return { ended: pass.done, failed: pass.failed, more: pass.more };
}

async function stepJob(claimed: ImportJob, options: ImportRunOptions): Promise<'done' | 'more'> {
  const stopAt = nowMillis() + (options.jobMs ?? JOB_MS);
  const reader = claimed.cancelRequested ? undefined : readerFor(claimed);
  let job = claimed;
  for (let steps = 0; ; steps++) {
    if (steps >= (options.stepsPerJob ?? Number.POSITIVE_INFINITY) || nowMillis() >= stopAt) {
      await releaseJob(job, options.owner, nowMillis());
      return 'more';
    }
    const step = await withHeartbeat(job, options.owner, () =>
      runImportStep(job, {
        owner: options.owner,
        leaseMs: LEASE_MS,
        ...(options.writers ? { writers: options.writers } : {}),
        ...(reader ? { reader } : {}),
      }),
    );
    if (step.outcome !== 'more') return 'done';
    job = step.job;
  }
}

/**
 * Runs a step while renewing the lease every HEARTBEAT_MS: a page that takes minutes (a Zendesk page of 100
 * tickets is ~100 requests at the source's pace) keeps its job, and a runner that dies loses it LEASE_MS later.
 */
export async function withHeartbeat<T>(job: ImportJob, owner: string, step: () => Promise<T>): Promise<T> {
  const stop = new AbortController();
  every(HEARTBEAT_MS, stop.signal, () => {
    renewLease(job.accountId, job.id, owner, nowMillis() + LEASE_MS).catch(logError);
  });
  try {
    return await step();
  } finally {
    stop.abort();
  }
}

/** Passes until `until` (epoch ms) or `stopped()`; with `untilDrained`, also once nothing is due. */
export async function runImports(
  until: number,
  options: ImportRunOptions & { pollMs?: number; stopped?: () => boolean; untilDrained?: boolean },
): Promise<{ passes: number; ended: number }> {
  const totals = { passes: 0, ended: 0 };
  const cursors: DueCursors = new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await importPass({ ...options, cursors });
      totals.passes++;
      totals.ended += pass.ended;
      more = pass.more;
    } catch (error) {
      logError(error);
    }
    if (!more && options.untilDrained) break;
    if (!more) {
      const end = nowMillis() + Math.min(options.pollMs ?? IMPORT_POLL_MS, Math.max(0, until - nowMillis()));
      while (nowMillis() < end && !options.stopped?.()) await sleep(Math.min(500, end - nowMillis()));
    }
  }
  return totals;
}
