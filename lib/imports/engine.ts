import { putErrorRows } from '#lib/data/imports/errors.ts';
import type { ImportCheckpoint, ImportJob, ImportStatus } from '#lib/data/imports/jobs.ts';
import { endJob, pauseJob, releaseJob, saveStep } from '#lib/data/imports/runs.ts';
import { uploadBytes, uploadPresent } from '#lib/data/imports/uploads.ts';
import { hasMailStore, mailStore } from '#lib/data/mail-store.ts';
import { now, nowMillis, parseTimestamp } from '#lib/time.ts';
import { type AttachmentCopier, sourceAttachmentCopier } from './attachments.ts';
import type { Sealer } from './credentials.ts';
import { presentImport } from './present.ts';
import {
  IMPORT_PHASES,
  type ImportErrorRow,
  type ImportPhase,
  type ImportSourceReader,
  type SourcePage,
} from './records.ts';
import { environmentSealer } from './sealers.ts';
import { SourceAuthFailed, SourceUnavailable } from './source-errors.ts';
import { freshdeskSource } from './sources/freshdesk.ts';
import { ndjsonSource } from './sources/ndjson.ts';
import { zendeskSource } from './sources/zendesk.ts';
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
 * pauses it until the time it said, or PAUSE_MS on; a cancel asked for ends it at the next step.
 */
export const PAUSE_MS = 60_000;
/** The longest Retry-After a step waits inside a page: a longer one pauses the job instead. */
export const STEP_MAX_WAIT_MS = 20_000;

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
}

/** `more`: the job goes on (`job` as saved); `paused`, `ended`; `lost`: another save or runner came first. */
export type StepOutcome =
  | { outcome: 'more'; job: ImportJob }
  | { outcome: 'paused' | 'ended' | 'lost' | 'waiting' | 'cut' };

/** How often a job whose file goes to S3 looks for it, and how long it waits for it. */
const UPLOAD_POLL_MS = 10_000;

/**
 * The reader of a job's source, from its sealed credentials opened by `sealer` (an ndjson job: its uploaded file);
 * its reads stop when `signal` aborts (SourceUnavailable).
 */
export async function readerFor(
  job: ImportJob,
  sealer: Sealer,
  signal?: AbortSignal,
): Promise<ImportSourceReader> {
  if (job.source === 'ndjson') return ndjsonSource(uploadBytes(job.accountId, job.id));
  const credentials = await sealer.open(job.accountId, job.id, job.cred ?? '');
  const common = {
    since: job.since ?? undefined,
    rateShare: job.rateShare ?? undefined,
    maxWaitMs: STEP_MAX_WAIT_MS,
    signal,
  };
  if (job.source === 'zendesk') {
    const { subdomain = '', email = '', api_token: apiToken = '' } = credentials;
    return zendeskSource({ ...common, subdomain, email, apiToken });
  }
  const { domain = '', api_key: apiKey = '' } = credentials;
  return freshdeskSource({ ...common, domain, apiKey });
}

export async function runImportStep(job: ImportJob, options: StepOptions): Promise<StepOutcome> {
  if (job.status === 'undoing') return runUndoStep(job, options);
  if (job.cancelRequested) return end(job, options.owner, 'cancelled', null);
  // Deployed, an ndjson file is PUT to S3 with no word to the service: the job looks for it until it is there.
  if (job.source === 'ndjson' && !job.uploaded && !(await uploadPresent(job.accountId, job.id))) {
    if (nowMillis() - parseTimestamp(job.createdAt) / 1000 > UPLOAD_TTL_MS)
      return end(job, options.owner, 'failed', 'No file was uploaded within an hour of the import.');
    await releaseJob(job, options.owner, nowMillis() + UPLOAD_POLL_MS);
    return { outcome: 'waiting' };
  }
  const { next, page } = job.checkpoint;
  const phase = job.checkpoint.phase as ImportPhase;
  let read: SourcePage;
  const reader =
    options.reader ?? (await readerFor(job, options.sealer ?? environmentSealer(), options.signal));
  try {
    read = await reader.page(phase, next, { since: job.since ?? undefined });
  } catch (error) {
    if (options.signal?.aborted) return cut(job, options.owner);
    if (error instanceof SourceAuthFailed) return end(job, options.owner, 'failed', error.message);
    if (!(error instanceof SourceUnavailable)) throw error;
    const paused = await pauseJob(job, options.owner, error.retryAtMs ?? nowMillis() + PAUSE_MS);
    return { outcome: paused ? 'paused' : 'lost' };
  }
  let written: PageWritten;
  try {
    written = await writePage(job, read, options.writers ?? IMPORT_WRITERS, copierFor(job, reader));
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

/**
 * Who copies a run's attachments: the source's files (a vendor's client, an ndjson file's own lines) into the mail
 * store (where e-mailed attachments are kept), when the process has one; none for a validate run (it copies nothing).
 * Without one, each attachment is an error row (lib/imports/ticket-files.ts).
 */
export function copierFor(job: ImportJob, reader: ImportSourceReader): AttachmentCopier | undefined {
  if (job.mode === 'validate' || !reader.files || !hasMailStore()) return undefined;
  return sourceAttachmentCopier(reader.files, mailStore());
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
  attachments: AttachmentCopier | undefined,
): Promise<PageWritten> {
  const ctx: ImportContext = {
    accountId: job.accountId,
    importId: job.id,
    source: job.source,
    validate: job.mode === 'validate',
    ...(attachments ? { attachments } : {}),
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
