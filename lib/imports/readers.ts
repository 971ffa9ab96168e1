import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { uploadBytes } from '#lib/data/imports/uploads.ts';
import { hasMailStore, mailStore } from '#lib/data/mail-store.ts';
import { type AttachmentCopier, sourceAttachmentCopier } from './attachments.ts';
import type { Sealer } from './credentials.ts';
import type { ImportSourceReader } from './records.ts';
import { freshdeskSource } from './sources/freshdesk.ts';
import { ndjsonSource } from './sources/ndjson.ts';
import { zendeskSource } from './sources/zendesk.ts';

/** The longest Retry-After a step waits inside a page: a longer one pauses the job instead. */
export const STEP_MAX_WAIT_MS = 20_000;

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

/**
 * Who copies a run's attachments: the source's files (a vendor's client, an ndjson file's own lines) into the mail
 * store (where e-mailed attachments are kept), when the process has one; none for a validate run (it copies nothing).
 * Without one, each attachment is an error row (lib/imports/ticket-files.ts).
 */
export function copierFor(job: ImportJob, reader: ImportSourceReader): AttachmentCopier | undefined {
  if (job.mode === 'validate' || !reader.files || !hasMailStore()) return undefined;
  return sourceAttachmentCopier(reader.files, mailStore());
}
