import http from 'node:http';
import https from 'node:https';

/** Helpers of lib/imports/http.ts: answer headers as Headers, a JSON body, a Retry-After read, its connections. */

/** A 429 without Retry-After waits one rate window. */
const DEFAULT_RETRY_AFTER_MS = 60_000;
const MAX_RETRY_AFTER_MS = 60 * 60_000;

export function headersOf(raw: http.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Retry-After in ms from `now`: delta seconds or an HTTP date; a rate window when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number {
  if (value === null || value.trim() === '') return DEFAULT_RETRY_AFTER_MS;
  const ms = /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms)) return DEFAULT_RETRY_AFTER_MS;
  return Math.min(Math.max(0, Math.ceil(ms)), MAX_RETRY_AFTER_MS);
}

/** The kept-alive connections of the import sources' clients. */
export const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 4, timeout: 4_000 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 4, timeout: 4_000 }),
};

/** Closes the kept-alive connections (a test's end). */
export function closeSourceConnections(): void {
  for (const agent of Object.values(agents)) agent.destroy();
}
