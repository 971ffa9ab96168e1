import { putErrorRows } from '#lib/data/imports/errors.ts';
import type { ImportCheckpoint, ImportJob, ImportStatus } from '#lib/data/imports/jobs.ts';
import { endJob, pauseJob, releaseJob, saveStep } from '#lib/data/imports/runs.ts';
import { uploadPresent } from '#lib/data/imports/uploads.ts';
import { hasMailStore } from '#lib/data/mail-store.ts';
import { now, nowMillis, parseTimestamp } from '#lib/time.ts';
import type { Sealer } from './credentials.ts';
import { type PageProgress, pageProgress } from './page-progress.ts';
import { presentImport } from './present.ts';
import { copierFor, readerFor } from './readers.ts';
import {
  IMPORT_PHASES,
  type ImportErrorRow,
  type ImportPhase,
  type ImportSourceReader,
  type SourcePage,
} from './records.ts';
import { environmentSealer } from './sealers.ts';
import { SourceAuthFailed, SourceUnavailable } from './source-errors.ts';
import { runUndoStep } from './undo.ts';
import { UPLOAD_TTL_MS } from './upload-url.ts';
import { IMPORT_WRITERS, type ImportWriters } from './writers.ts';
import { addCounts, countOutcome, type ImportContext, type PageWritten } from './writing.ts';

/**
 * The import engine (docs/imports.md, "The engine"): one step of a job is one page of its current phase, read at
 * its checkpoint, its records handed to the writer of their type (people, tickets; a validate run's writers decide
 * and write nothing), then the checkpoint, the summed counts and progress saved at the job's revision under the
 * runner's lease, the page's error rows written just before under keys of that page. A crash between the writes
 * and the save reads the same page again: the writers are keyed by source id, so that is safe, and the counts are
 * saved once. The phase read to its end moves to the next; after the last, the job is completed.
 *
 * The source refusing the credentials fails the job at once; the source unavailable (5xx, 429s past the waits)
 * pauses it until the time it said, or PAUSE_MS on; a cancel asked for ends it at the next step. What a job reads
 * from and copies with is ./readers.ts's.
 */

/** How long a job pauses when its source is unavailable and names no time. */
export const PAUSE_MS = 60_000;
/** A job paused this long (a Ctrl-C not followed by the command again, a source down for days) is cancelled. */
export const PAUSED_LIMIT_MS = 7 * 24 * 60 * 60 * 1000;
export const PAUSED_TOO_LONG =
  'Paused for 7 days: cancelled, and its credentials deleted. What it imported stays; start the import again to ' +
  'finish it (what is in already is found unchanged, nothing is imported twice).';

export interface StepOptions {
  /** The runner holding the job's lease, and how long a save extends it. */
  owner: string;
  leaseMs: number;
  writers?: ImportWriters;
  /** The source's reader for the job (a runner keeps one a job, so its pace holds across steps). */
  reader?: ImportSourceReader;
  /** Opens the job's credentials when no reader is given (readerFor). */
  sealer?: Sealer;
  /**
   * Cuts the step (its reads, its attachments' fetches) when it aborts: the run's time is up. The job is released
   * due at once, from its checkpoint (the page is read again; the writers are keyed): outcome `cut`.
   */
  signal?: AbortSignal;
  /** Told each progress saved within a page (`admin import`'s bar moves with it). */
  onProgress?: ((progress: ImportJob['progress']) => void) | undefined;
}

/** `more`: the job goes on (`job` as saved); `paused`, `ended`; `lost`: another save or runner came first. */
export type StepOutcome =
  | { outcome: 'more'; job: ImportJob }
  | { outcome: 'paused' | 'ended' | 'lost' | 'waiting' | 'cut' };

/** How often a job whose file goes to S3 looks for it, and how long it waits for it. */
const UPLOAD_POLL_MS = 10_000;

export async function runImportStep(job: ImportJob, options: StepOptions): Promise<StepOutcome> {
  if (job.status === 'undoing') return runUndoStep(job, options);
  if (job.cancelRequested) return end(job, options.owner, 'cancelled', null);
  if (job.pausedAt !== null && nowMillis() - job.pausedAt >= PAUSED_LIMIT_MS)
    return end(job, options.owner, 'cancelled', PAUSED_TOO_LONG);
  // Deployed, an ndjson file is PUT to S3 with no word to the service: the job looks for it until it is there.
  if (job.source === 'ndjson' && !job.uploaded && !(await uploadPresent(job.accountId, job.id))) {
    if (nowMillis() - parseTimestamp(job.createdAt) / 1000 > UPLOAD_TTL_MS)
      return end(job, options.owner, 'failed', 'No file was uploaded within an hour of the import.');
    await releaseJob(job, options.owner, nowMillis() + UPLOAD_POLL_MS);
    return { outcome: 'waiting' };
  }
  // A page of tickets can take a minute: its progress is saved within it (./page-progress.ts).
  const progress =
    job.checkpoint.phase === 'tickets' ? pageProgress(job, options.owner, options.onProgress) : undefined;
  try {
    return await stepPage(job, options, progress);
  } finally {
    await progress?.stop();
  }
}

async function stepPage(
  job: ImportJob,
  options: StepOptions,
  progress: PageProgress | undefined,
): Promise<StepOutcome> {
  const { next, page } = job.checkpoint;
  const phase = job.checkpoint.phase as ImportPhase;
  let read: SourcePage;
  const reader =
    options.reader ?? (await readerFor(job, options.sealer ?? environmentSealer(), options.signal));
  try {
    read = await reader.page(phase, next, { since: job.since ?? undefined, onTicket: progress?.read });
  } catch (error) {
    if (options.signal?.aborted) return cut(job, options.owner);
    if (error instanceof SourceAuthFailed) return end(job, options.owner, 'failed', error.message);
    if (!(error instanceof SourceUnavailable)) throw error;
    const dueMs = error.retryAtMs ?? nowMillis() + PAUSE_MS;
    const paused = await pauseJob(job, options.owner, dueMs, nowMillis());
    return { outcome: paused ? 'paused' : 'lost' };
  }
  let written: PageWritten;
  try {
    written = await writePage(job, read, options.writers ?? IMPORT_WRITERS, {
      attachments: copierFor(job, reader),
      copiesFiles: reader.files !== undefined && hasMailStore(),
      onTicket: progress?.written,
    });
  } catch (error) {
    // Cut while copying the page's attachments: what it wrote is keyed, and the page is written again.
    if (options.signal?.aborted) return cut(job, options.owner);
    throw error;
  }
  await putErrorRows(job.accountId, job.id, page, written.errors);
  const counts = addCounts(job.counts, written.counts);
  const done = counts.tickets?.source ?? 0;
  const total = phase === 'tickets' && read.total !== undefined ? read.total : job.progress.total;
  const checkpoint = nextCheckpoint(job.checkpoint, read.next);
  const moved = { ...job, counts, progress: { done, total } };
  if (checkpoint === null) return end(moved, options.owner, 'completed', null);
  const saved = await saveStep(
    job,
    options.owner,
    {
      status: 'running',
      checkpoint,
      counts,
      progress: moved.progress,
      startedAt: job.startedAt ?? now(),
      uploaded: true,
    },
    nowMillis() + options.leaseMs,
  );
  return saved ? { outcome: 'more', job: saved } : { outcome: 'lost' };
}

/** The run's time is up mid-step: the job released due at once, its checkpoint where it was. */
async function cut(job: ImportJob, owner: string): Promise<StepOutcome> {
  await releaseJob(job, owner, nowMillis());
  return { outcome: 'cut' };
}

/** Where the job reads next: on in the phase, the next phase's start, or null after the last. */
function nextCheckpoint(at: ImportCheckpoint, next: string | null): ImportCheckpoint | null {
  if (next !== null) return { phase: at.phase, next, page: at.page + 1 };
  const following = IMPORT_PHASES[IMPORT_PHASES.indexOf(at.phase as ImportPhase) + 1];
  return following === undefined ? null : { phase: following, next: null, page: at.page + 1 };
}

/** A page's records through their writers; the source's own error rows counted as failed records of their type. */
async function writePage(
  job: ImportJob,
  read: SourcePage,
  writers: ImportWriters,
  given: Pick<ImportContext, 'attachments' | 'copiesFiles' | 'onTicket'>,
): Promise<PageWritten> {
  const ctx: ImportContext = {
    accountId: job.accountId,
    importId: job.id,
    source: job.source,
    validate: job.mode === 'validate',
    mark: `${job.id}:${job.checkpoint.page}`,
    ...given,
  };
  const people = read.records.filter((record) => record.type !== 'tickets');
  const tickets = read.records.filter((record) => record.type === 'tickets');
  const pages = [
    people.length > 0 ? await writers.people(ctx, people) : undefined,
    tickets.length > 0 ? await writers.tickets(ctx, tickets) : undefined,
  ];
  const sourced: PageWritten = { counts: {}, errors: read.errors };
  for (const row of read.errors) countOutcome(sourced, row.type, 'failed');
  let counts = sourced.counts;
  const errors: ImportErrorRow[] = [...read.errors];
  for (const written of pages) {
    if (!written) continue;
    counts = addCounts(counts, written.counts);
    errors.push(...written.errors);
  }
  return { counts, errors };
}

/** Ends the job: its credentials gone; `import.completed` or `import.failed` with the counts (not for validate). */
async function end(
  job: ImportJob,
  owner: string,
  status: ImportStatus,
  failure: string | null,
): Promise<StepOutcome> {
  const progress =
    status === 'completed' ? { done: job.progress.done, total: job.progress.done } : job.progress;
  const ended: ImportJob = { ...job, status, failure, progress, completedAt: now(), cred: null };
  const type = status === 'completed' ? 'import.completed' : status === 'failed' ? 'import.failed' : null;
  const event =
    type && job.mode === 'run' ? { type, object: presentImport(ended), version: job.rev + 1 } : undefined;
  const saved = await endJob(
    job,
    owner,
    {
      status,
      completedAt: ended.completedAt ?? now(),
      failure,
      progress,
      counts: job.counts,
      startedAt: job.startedAt ?? ended.completedAt,
    },
    event,
  );
  return { outcome: saved ? 'ended' : 'lost' };
}
