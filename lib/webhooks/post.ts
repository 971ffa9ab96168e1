import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { nowMicros, nowMillis, sleep } from '#lib/time.ts';
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
 * Keep-alive connections, one pool per origin **and checked address** (docs/webhooks.md, "Connections"): a
 * delivery's connection setup (TCP, and TLS's handshake on https) is paid once per origin rather than once per
 * attempt. The pool's key holds the address the URL policy answered for this attempt, and its agent connects to that
 * address only (its `lookup` answers it): a host whose name re-resolves elsewhere gets the check again before the
 * attempt (deliverOnce), and a refused address never reaches the pool; an allowed new address gets a pool of its
 * own, so a socket opened to the old address is never handed a request meant for the new one, nor the reverse.
 * Bounded: at most SOCKETS_PER_ORIGIN connections to one origin at once (attempts beyond wait within their own
 * limit), FREE_SOCKETS_PER_ORIGIN of them kept idle for at most IDLE_MS (under Node's and most servers' 5 s
 * keep-alive), and at most MAX_ORIGINS pools (the least recently used idle one is closed past it). An endpoint's
 * window reaches 48 attempts (lib/webhooks/due.ts), each of which leaves its socket idle while its next delivery is
 * claimed: fewer idle sockets kept than that, and nearly half the deliveries opened a connection (TLS's handshake:
 * ~100 ms at a 50 ms RTT, a third of a 200 ms receiver's attempt). The bound on open sockets is the process's: 16
 * pools × 48 idle + the runner's 128 attempts stay under a Lambda's 1,024 file descriptors.
 */
export const SOCKETS_PER_ORIGIN = 64;
export const FREE_SOCKETS_PER_ORIGIN = 48;
export const IDLE_MS = 4_000;
export const MAX_ORIGINS = 16;

const pools = new Map<string, http.Agent>();

/** The pool of the target's origin at its checked address (made, or moved to the end of the LRU order). */
function poolOf(target: WebhookTarget): http.Agent {
  const key = `${target.url.protocol}//${target.url.host}@${target.address}`;
  const found = pools.get(key);
  if (found) {
    pools.delete(key);
    pools.set(key, found);
    return found;
  }
  const pinned: LookupFunction = (_host, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const options = {
    keepAlive: true,
    maxSockets: SOCKETS_PER_ORIGIN,
    maxFreeSockets: FREE_SOCKETS_PER_ORIGIN,
    timeout: IDLE_MS,
    scheduling: 'lifo' as const,
    lookup: pinned,
  };
  const agent = target.url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  pools.set(key, agent);
  if (pools.size > MAX_ORIGINS) {
    // The least recently used pool with no request on its sockets: its idle sockets closed, the pool dropped.
    for (const [oldKey, old] of pools) {
      if (pools.size <= MAX_ORIGINS) break;
      if (old === agent || Object.keys(old.sockets).length > 0 || Object.keys(old.requests).length > 0)
        continue;
      pools.delete(oldKey);
      old.destroy();
    }
  }
  return agent;
}

/** The pools open now (tests, figures). */
export function openPools(): number {
  return pools.size;
}

/** Closes every pooled connection (a test's end; the due function's process keeps them between runs). */
export function closePools(): void {
  for (const agent of pools.values()) agent.destroy();
  pools.clear();
}

/** Errors of a pooled connection the receiver closed while it was idle: the request is sent again, once fresh. */
const STALE_SOCKET_ERRORS = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/**
 * POSTs `body` to the target, connecting only to its checked address (the name is kept for the Host header and
 * TLS's SNI and certificate check) over its origin's pool; no redirect is followed. Answers within `timeoutMs`
 * whatever the receiver does: a slow connection, a slow or endless answer is cut there (and its connection closed,
 * never pooled); at most MAX_ANSWER_BYTES of the answer are read. A pooled connection the receiver had closed
 * (reset before any answer) is retried on another within the same limit: the receiver may get that POST twice,
 * with the same webhook-id, as after any lost answer.
 */
export function postWebhook(
  target: WebhookTarget,
  body: Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<Answer> {
  const started = nowMicros();
  const elapsed = () => Math.round((nowMicros() - started) / 1000);
  // The limit is the clock's: on a test's manual clock, a receiver that never answers is cut when the test
  // advances the clock past it.
  const limit = new AbortController();
  const agent = poolOf(target);
  return new Promise<Answer>((resolve) => {
    let settled = false;
    let status: number | null = null;
    let retryAfterMs: number | null = null;
    let request: http.ClientRequest;
    /** `keep`: the answer was read to its end, and its connection goes back to the pool. */
    const finish = (error: string | null, keep = false) => {
      if (settled) return;
      settled = true;
      limit.abort();
      if (!keep) request.destroy();
      resolve({ status, error: status === null ? error : null, retryAfterMs, durationMs: elapsed() });
    };
    const send = (tries: number) => {
      const client = target.url.protocol === 'https:' ? https : http;
      request = client.request(target.url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        agent,
      });
      const sent = request;
      sent.on('response', (response) => {
        status = response.statusCode ?? null;
        retryAfterMs = retryAfterOf(response.headers['retry-after']);
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_ANSWER_BYTES) finish(null);
        });
        response.on('end', () => finish(null, true));
        response.on('error', () => finish(null));
        response.on('close', () => finish(null, response.complete));
      });
      sent.on('error', (error: NodeJS.ErrnoException) => {
        if (settled || sent !== request) return;
        if (status === null && sent.reusedSocket && tries < 3 && STALE_SOCKET_ERRORS.has(error.code ?? '')) {
          send(tries + 1);
          return;
        }
        finish(connectionError(error));
      });
      sent.end(body);
    };
    void sleep(timeoutMs, limit.signal).then(() => finish('timeout'));
    send(1);
  });
}

function connectionError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED') return 'connection_refused';
  return `connection_failed: ${error.code ?? error.message}`;
}

/** Retry-After in ms from now: delta seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterOf(value: string | string[] | undefined, now = nowMillis()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return null;
  const ms = /^\s*\d+\s*$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS) : null;
}
