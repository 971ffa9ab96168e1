import { contentDisposition } from '#lib/data/mail-store.ts';
import type { Download } from '#lib/email/downloads.ts';
import type { HttpResult } from './request.ts';

/**
 * A download's answer: 200 with the bytes (Content-Disposition names the file; never cached by a shared cache, as
 * mail is personal), or 303 to the store's short-lived link for an object too large for a function's answer.
 */
export function downloadAnswer(download: Download): HttpResult {
  if (download.kind === 'link') {
    return {
      statusCode: 303,
      body: { message: 'See the Location header: the file is served from there for 5 minutes.' },
      headers: { Location: download.url, 'Cache-Control': 'no-store' },
    };
  }
  return {
    statusCode: 200,
    body: undefined,
    binary: { contentType: download.contentType, bytes: download.bytes },
    headers: {
      'Content-Disposition': contentDisposition(download.filename),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    },
  };
}
