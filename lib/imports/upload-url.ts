import { createHmac, timingSafeEqual } from 'node:crypto';
import { SECRETS_KEY_VARIABLE } from './credentials.ts';

/**
 * An ndjson job's upload URL under `npm start` (docs/imports.md, "Uploads"): a PUT to the local gateway's own
 * route, `/local/imports/<account>/<id>?expires=<ms>&signature=<hex>`, the signature an HMAC-SHA256 under
 * IMPORT_SECRETS_KEY of the account, the job and the expiry, so only the job's own answer can upload its file, for
 * an hour. Deployed (IMPORT_UPLOAD_BUCKET set), the answer carries a presigned S3 PUT instead (lib/data/imports/uploads.ts).
 */
export const UPLOAD_PATH_PREFIX = '/local/imports/';
export const UPLOAD_TTL_MS = 60 * 60 * 1000;

function signature(accountId: string, id: string, expiresMs: number): string {
  const key = process.env[SECRETS_KEY_VARIABLE];
  if (!key) throw new Error(`${SECRETS_KEY_VARIABLE} is not set (32 bytes, base64)`);
  return createHmac('sha256', Buffer.from(key, 'base64'))
    .update(`upload#${accountId}#${id}#${expiresMs}`)
    .digest('hex');
}

export function localUploadUrl(baseUrl: string, accountId: string, id: string, nowMs: number): string {
  const expires = nowMs + UPLOAD_TTL_MS;
  const path = `${UPLOAD_PATH_PREFIX}${encodeURIComponent(accountId)}/${id}`;
  return `${baseUrl}${path}?expires=${expires}&signature=${signature(accountId, id, expires)}`;
}

/** The job an upload URL names, when its signature holds and it has not expired; else undefined. */
export function readUploadUrl(url: URL, nowMs: number): { accountId: string; id: string } | undefined {
  if (!url.pathname.startsWith(UPLOAD_PATH_PREFIX)) return undefined;
  const [account, id, ...rest] = url.pathname.slice(UPLOAD_PATH_PREFIX.length).split('/');
  const expires = Number(url.searchParams.get('expires'));
  const given = url.searchParams.get('signature') ?? '';
  if (!account || !id || rest.length > 0 || !Number.isSafeInteger(expires) || expires < nowMs)
    return undefined;
  let accountId: string;
  try {
    accountId = decodeURIComponent(account);
  } catch {
    return undefined;
  }
  const wanted = Buffer.from(signature(accountId, id, expires));
  const sent = Buffer.from(given);
  if (sent.length !== wanted.length || !timingSafeEqual(sent, wanted)) return undefined;
  return { accountId, id };
}
