import { randomBytes } from 'node:crypto';
import { requestCancel } from '#lib/data/imports/asks.ts';
import { errorRowsAfter } from '#lib/data/imports/errors.ts';
import { getJob, type ImportJob, listJobs, putNewJob } from '#lib/data/imports/jobs.ts';
import { presignedUpload, uploadsInS3 } from '#lib/data/imports/uploads.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { NotFound, Refused } from '#lib/errors.ts';
import { now, nowMillis } from '#lib/time.ts';
import type { Sealer } from './credentials.ts';
import {
  IMPORT_ID_PATTERN,
  parseImportErrorsQuery,
  parseImportListQuery,
  parseImportRequest,
} from './job-schemas.ts';
import { presentErrorRow, presentImport } from './present.ts';
import { sourceBaseUrl } from './source-url.ts';
import { localUploadUrl, UPLOAD_TTL_MS } from './upload-url.ts';

/**
 * The import routes (decisions.md, "Imports: moving a helpdesk in"; docs/imports.md, "Jobs"): a job is started at
 * once (202) as the account's one active import, and run in the background by the import runner
 * (./runner.ts) a page at a time from its checkpoint. An ndjson job waits for its file (`upload_url`) before it is due.
 */

/** `imp_` + 13 digits of ms + 10 hex: time-ordered (the list is newest first by key), unguessable. */
const newImportId = () => `imp_${String(nowMillis()).padStart(13, '0')}${randomBytes(5).toString('hex')}`;

export interface StartedImport {
  job: ImportJob;
  uploadUrl: string | null;
}

export function presentStarted(started: StartedImport) {
  const shown = presentImport(started.job);
  return started.uploadUrl === null ? shown : { ...shown, upload_url: started.uploadUrl };
}

export async function startImport(
  accountId: string,
  body: unknown,
  baseUrl: string,
  attach: ((started: StartedImport) => CommitAttachment) | undefined,
  sealer: Sealer,
): Promise<StartedImport> {
  const request = parseImportRequest(body);
  // The vendor's name checked before anything is kept (a 422 on `subdomain` or `domain`).
  if (request.source === 'zendesk') sourceBaseUrl('zendesk', request.credentials.subdomain ?? '');
  if (request.source === 'freshdesk') sourceBaseUrl('freshdesk', request.credentials.domain ?? '');
  const id = newImportId();
  const ndjson = request.source === 'ndjson';
  const job: ImportJob = {
    accountId,
    id,
    source: request.source,
    mode: request.mode,
    status: 'queued',
    since: request.since,
    rateShare: request.rateShare,
    progress: { done: 0, total: null },
    counts: {},
    checkpoint: { phase: 'agents', next: null, page: 0 },
    createdAt: now(),
    startedAt: null,
    completedAt: null,
    failure: null,
    cancelRequested: false,
    uploaded: !ndjson,
    cred: ndjson ? null : await sealer.seal(accountId, id, request.credentials),
    rev: 0,
    owner: null,
    until: null,
    pausedAt: null,
  };
  // Deployed, a presigned S3 PUT, and the job due at once to look for its file; locally, the gateway's own PUT,
  // which makes the job due when the file is in.
  const s3 = ndjson && uploadsInS3();
  const uploadUrl = !ndjson
    ? null
    : s3
      ? await presignedUpload(accountId, id, UPLOAD_TTL_MS / 1000)
      : localUploadUrl(baseUrl, accountId, id, nowMillis());
  const started = { job, uploadUrl };
  await putNewJob(
    job,
    ndjson && !s3 ? null : nowMillis(),
    attach?.(started),
    (active) =>
      new Refused(
        `An import is already running for this account (${active}): wait for it to end, or cancel it.`,
      ),
  );
  return started;
}

/** The account's import of this id, or undefined (another account's, unknown, not an import id): a path's object. */
export async function findImport(accountId: string, id: string): Promise<ImportJob | undefined> {
  return IMPORT_ID_PATTERN.test(id) ? getJob(accountId, id) : undefined;
}

async function findJob(accountId: string, id: string): Promise<ImportJob> {
  const job = IMPORT_ID_PATTERN.test(id) ? await getJob(accountId, id) : undefined;
  if (!job) throw new NotFound();
  return job;
}

export async function showImport(accountId: string, id: string) {
  return { data: presentImport(await findJob(accountId, id)) };
}

export async function listImports(accountId: string, query: Record<string, string[]>) {
  const { after, limit } = parseImportListQuery(query);
  const jobs = await listJobs(accountId, after, limit + 1);
  const shown = jobs.slice(0, limit);
  return {
    data: shown.map(presentImport),
    next_cursor: jobs.length > limit ? (shown.at(-1)?.id ?? null) : null,
  };
}

/** Asks the job to stop at its next checkpoint (what is in stays); an ended job's cancel is a 409. */
export async function cancelImport(accountId: string, id: string) {
  const found = await findJob(accountId, id);
  const asked = await requestCancel(accountId, found.id, nowMillis());
  if (!asked) throw new Refused(`The import has ended (${found.status}): there is nothing to cancel.`);
  return { data: presentImport(asked) };
}

export async function listImportErrors(accountId: string, id: string, query: Record<string, string[]>) {
  const { after, limit } = parseImportErrorsQuery(query);
  const job = await findJob(accountId, id);
  const page = await errorRowsAfter(accountId, job.id, after, limit);
  return { data: page.rows.map(presentErrorRow), next_cursor: page.next };
}
