import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { WebhookTarget } from './url-policy.ts';

/**
 * The HTTP side of an attempt (docs/webhooks.md, "One attempt"): one POST to the address the URL policy checked, cut at
 * the attempt limit, and what the receiver answered (lib/webhooks/deliver.ts decides what it makes of it).
 */

/** At most this much of an answer is read; the rest is dropped with the connection. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** A Retry-After is honoured up to this far ahead (a delivery's items are kept 30 days). */
const MAX_RETRY_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

/** What the receiver answered, or why there was no answer. */
export interface Answer {
  status: number | null;
  /** `timeout`, `connection_refused`, `connection_failed: <code>`, `url_refused: <why>`; null with a status. */
  error: string | null;
  /** A 429/503's Retry-After, in ms from now. */
  retryAfterMs: number | null;
  durationMs: number;
}

/**
 * POSTs `body` to the target, connecting only to its checked address (the name is kept for the Host header and
 * TLS's SNI and certificate check); no redirect is followed. Answers within `timeoutMs` whatever the receiver
 * does: a slow connection, a slow or endless answer is cut there; at most MAX_ANSWER_BYTES of the answer are read.
 */
export function postWebhook(
  target: WebhookTarget,
  body: Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<Answer> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const pinned: LookupFunction = (_host, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  return new Promise<Answer>((resolve) => {
    let settled = false;
    let status: number | null = null;
    let retryAfterMs: number | null = null;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve({ status, error: status === null ? error : null, retryAfterMs, durationMs: elapsed() });
    };
    const client = target.url.protocol === 'https:' ? https : http;
    const request = client.request(target.url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(body.length) },
      lookup: pinned,
      agent: false,
    });
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    request.on('response', (response) => {
      status = response.statusCode ?? null;
      retryAfterMs = retryAfterOf(response.headers['retry-after']);
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_ANSWER_BYTES) finish(null);
      });
      response.on('end', () => finish(null));
      response.on('error', () => finish(null));
      response.on('close', () => finish(null));
    });
    request.on('error', (error: NodeJS.ErrnoException) => finish(connectionError(error)));
    request.end(body);
  });
}

function connectionError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED') return 'connection_refused';
  return `connection_failed: ${error.code ?? error.message}`;
}

/** Retry-After in ms from now: delta seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterOf(value: string | string[] | undefined, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return null;
  const ms = /^\s*\d+\s*$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS) : null;
}
