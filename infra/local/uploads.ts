import type { IncomingMessage, ServerResponse } from 'node:http';
import { markUploaded } from '#lib/data/imports/asks.ts';
import { getJob } from '#lib/data/imports/jobs.ts';
import { putLocalUpload } from '#lib/data/imports/uploads.ts';
import { readUploadUrl, UPLOAD_PATH_PREFIX } from '#lib/imports/upload-url.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The local stand-in for an ndjson import's presigned S3 PUT (docs/imports.md, "Uploads"): `PUT
 * /local/imports/<account>/<id>?expires=&signature=` (lib/imports/upload-url.ts signs it) streams the body into the
 * local object store's folder (IMPORT_UPLOAD_DIR) and makes the job due. Not a route of the API (no key: the
 * signature is the grant, as a presigned URL's is), so it is served before the route table. Answers as S3 does: 200
 * with no body; 403 for a signature that does not hold or has expired; 409 when the job takes no file (ended,
 * running, not ndjson).
 */
export async function serveImportUpload(
  req: IncomingMessage,
  res: ServerResponse,
  baseUrl: URL,
): Promise<boolean> {
  const url = new URL(req.url ?? '/', baseUrl);
  if (req.method !== 'PUT' || !url.pathname.startsWith(UPLOAD_PATH_PREFIX)) return false;
  const job = readUploadUrl(url, nowMillis());
  const answer = (status: number, message?: string) => {
    res.writeHead(status, message ? { 'Content-Type': 'application/json' } : {});
    res.end(message ? JSON.stringify({ message }) : undefined);
  };
  if (!job) {
    req.resume();
    answer(403, 'The upload URL is not valid or has expired.');
    return true;
  }
  // One file, once, for a queued ndjson job: a file is never replaced under its reader.
  const held = await getJob(job.accountId, job.id);
  if (held?.source !== 'ndjson' || held.status !== 'queued' || held.uploaded) {
    req.resume();
    answer(409, 'The import takes no file now.');
    return true;
  }
  await putLocalUpload(job.accountId, job.id, req);
  const marked = await markUploaded(job.accountId, job.id, nowMillis());
  answer(marked ? 200 : 409, marked ? undefined : 'The import takes no file now.');
  return true;
}
