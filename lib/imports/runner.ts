import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { claimJob, dueImportWindow, releaseJob, renewLease } from '#lib/data/imports/runs.ts';
import type { DueCursors } from '#lib/data/index/due.ts';
import { duePass } from '#lib/due-pass.ts';
import { logError } from '#lib/log.ts';
import { every, nowMillis, sleep } from '#lib/time.ts';
import type { Sealer } from './credentials.ts';
import { runImportStep } from './engine.ts';
import { readerFor } from './readers.ts';
import type { ImportSourceReader } from './records.ts';
import { environmentSealer } from './sealers.ts';
import type { ImportWriters } from './writers.ts';

/**
 * The import runner (docs/imports.md, "The runner"): passes over the due jobs (gsi2 `IMPORT_DUE#<shard>`, never a
 * Scan), IMPORT_BATCH of them a pass shared round-robin by account. Each is claimed for LEASE_MS (its due entry
 * moved to the lease's end), then stepped (./engine.ts: a page each) for up to `jobMs`, each save extending the
 * lease, and a heartbeat every 20 s extending it during a long page; then released, due again at once. A runner that dies leaves the job due when its lease runs out, and the
 * next runner reads on from the checkpoint. A step that throws (the store, a writer) leaves the job claimed and due
 * RETRY_MS on (the same runner takes it back then; another once the lease has run out).
 *
 * A bounded run (the deployed function's invocation, functions/import-runner.ts) starts no step after its `until`,
 * and cuts the steps still in flight at its `stopBy` (their reads and attachment fetches stop; the job is released
 * due at once from its checkpoint, and the page is read again by the next run): it ends before its timeout
 * whatever a source does. A run opens each job's credentials once (the `sealer`: one KMS Decrypt deployed) and keeps
 * its reader across passes, so the source's pace holds across them.
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
  /** Opens the jobs' credentials (default: the environment's, ./sealers.ts). */
  sealer?: Sealer;
  /** No step starts at or after this time (epoch ms; runImports: its `until`). */
  startUntil?: number;
  /** Aborts when the run's time is up: the steps in flight are cut (runImports: at its `stopBy`). */
  signal?: AbortSignal;
  /** The run's readers, by job id: made once a job and run (its credentials opened once, its pace kept). */
  readers?: Map<string, ImportSourceReader>;
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
  const stopAt = Math.min(
    nowMillis() + (options.jobMs ?? JOB_MS),
    options.startUntil ?? Number.POSITIVE_INFINITY,
  );
  // A job cancelled or being undone reads nothing from its source.
  const reader =
    claimed.cancelRequested || claimed.status === 'undoing' ? undefined : await runReader(claimed, options);
  let job = claimed;
  for (let steps = 0; ; steps++) {
    if (
      steps >= (options.stepsPerJob ?? Number.POSITIVE_INFINITY) ||
      nowMillis() >= stopAt ||
      options.signal?.aborted
    ) {
      await releaseJob(job, options.owner, nowMillis());
      return 'more';
    }
    const step = await withHeartbeat(job, options.owner, () =>
      runImportStep(job, {
        owner: options.owner,
        leaseMs: LEASE_MS,
        ...(options.writers ? { writers: options.writers } : {}),
        ...(reader ? { reader } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      }),
    );
    if (step.outcome === 'cut') return 'more';
    if (step.outcome !== 'more') {
      options.readers?.delete(job.id);
      return 'done';
    }
    job = step.job;
  }
}

/** The job's reader for this run: the run's own if it has one, else made (its credentials opened) and kept. */
async function runReader(job: ImportJob, options: ImportRunOptions): Promise<ImportSourceReader> {
  const kept = options.readers?.get(job.id);
  if (kept) return kept;
  const reader = await readerFor(job, options.sealer ?? environmentSealer(), options.signal);
  options.readers?.set(job.id, reader);
  return reader;
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

/**
 * Passes until `until` (epoch ms) or `stopped()`; with `untilDrained`, also once nothing is due. With `stopBy`, the
 * steps still in flight then are cut (a bounded run: it ends by `stopBy` and a little more, one save a job).
 */
export async function runImports(
  until: number,
  options: ImportRunOptions & {
    pollMs?: number;
    stopped?: () => boolean;
    untilDrained?: boolean;
    stopBy?: number;
  },
): Promise<{ passes: number; ended: number }> {
  const totals = { passes: 0, ended: 0 };
  const cursors: DueCursors = new Map();
  const readers = new Map<string, ImportSourceReader>();
  const ended = new AbortController();
  const timeUp = new AbortController();
  if (options.stopBy !== undefined)
    void sleep(Math.max(0, options.stopBy - nowMillis()), ended.signal).then(() => {
      if (!ended.signal.aborted) timeUp.abort();
    });
  try {
    return await passes(
      until,
      options,
      { cursors, readers, signal: timeUp.signal, startUntil: until },
      totals,
    );
  } finally {
    ended.abort();
  }
}

async function passes(
  until: number,
  options: ImportRunOptions & { pollMs?: number; stopped?: () => boolean; untilDrained?: boolean },
  run: Pick<ImportRunOptions, 'cursors' | 'readers' | 'signal' | 'startUntil'>,
  totals: { passes: number; ended: number },
): Promise<{ passes: number; ended: number }> {
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await importPass({ ...options, ...run });
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
