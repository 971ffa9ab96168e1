import http from 'node:http';
import https from 'node:https';
import { ValidationFailed } from '#lib/errors.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { SourceAnswered, SourceAuthFailed, SourceHostRefused, SourceUnavailable } from './source-errors.ts';

export { type SourceVendor, sourceBaseUrl } from './source-url.ts';
export { SourceAnswered, SourceAuthFailed, SourceHostRefused, SourceUnavailable };

/**
 * The one HTTP client of the import sources (spec/decisions.md, "Imports: moving a helpdesk in"): it reaches the
 * vendor's own origin only, keeps to a share of the vendor's rate limit, honours a 429's Retry-After (no request
 * before it has elapsed), asks again after a 5xx, a network error or a timeout with a bounded backoff, and fails at
 * once on 401/403. Every wait is on the service's clock (lib/time.ts). The credentials are a header value it sends
 * and never writes anywhere else: no error message or log line holds them.
 */

export interface SourceHttpOptions {
  baseUrl: string;
  /** The Authorization header's value. */
  authorization: string;
  /** The share of the vendor's limit used, 0.1..1 (default half). */
  rateShare?: number | undefined;
  /** The vendor's documented limit, until an answer states the account's own. */
  publishedPerMinute: number;
  /** The answer headers that state the account's limit; [] keeps publishedPerMinute (an endpoint's own lower limit). */
  limitHeaders?: readonly string[];
  timeoutMs?: number;
  /** Tries for a 5xx, a network error or a timeout before SourceUnavailable. */
  maxTries?: number;
  /** 429s answered in a row before SourceUnavailable. */
  maxRateLimited?: number;
  /**
   * The longest Retry-After waited inside a read; a longer one is SourceUnavailable with its `retryAtMs`, so that a
   * bounded run (a Lambda's) pauses the job instead of sleeping through it. Default: wait any (up to an hour).
   */
  maxWaitMs?: number;
  signal?: AbortSignal | undefined;
}

const LIMIT_HEADERS = ['x-rate-limit', 'ratelimit-limit', 'x-ratelimit-total'];
/** A 429 without Retry-After waits one rate window. */
const DEFAULT_RETRY_AFTER_MS = 60_000;
const MAX_RETRY_AFTER_MS = 60 * 60_000;
const MAX_BACKOFF_MS = 30_000;
/** A page of an export (1,000 tickets) is a few MB; more is not a page. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 4, timeout: 4_000 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 4, timeout: 4_000 }),
};

/** Closes the kept-alive connections (a test's end). */
export function closeSourceConnections(): void {
  for (const agent of Object.values(agents)) agent.destroy();
}

type Outcome = { status: number; headers: Headers; text: string } | { failure: string };

export class SourceHttp {
  readonly origin: string;
  readonly #options: SourceHttpOptions;
  readonly #share: number;
  #perMinute: number;
  /** When the next request may leave (epoch ms of the clock). */
  #nextAt = Number.NEGATIVE_INFINITY;

  constructor(options: SourceHttpOptions) {
    const share = options.rateShare ?? 0.5;
    if (!(share >= 0.1 && share <= 1))
      throw ValidationFailed.field('rate_share', 'The rate share must be between 0.1 and 1.');
    if (!(options.publishedPerMinute > 0)) throw new Error('publishedPerMinute must be positive');
    this.origin = new URL(options.baseUrl).origin;
    this.#options = options;
    this.#share = share;
    this.#perMinute = options.publishedPerMinute;
  }

  /** The limit paced to now (requests a minute): the answered one once seen. */
  get limitPerMinute(): number {
    return this.#perMinute;
  }

  /** GETs a path of the source (or a URL on its origin) and answers its JSON. */
  async getJson(pathOrUrl: string): Promise<{ body: unknown; headers: Headers }> {
    const url = this.#resolve(pathOrUrl);
    const path = `${url.pathname}${url.search}`;
    const maxTries = this.#options.maxTries ?? 5;
    let failures = 0;
    let rateLimited = 0;
    for (;;) {
      await this.#pace();
      const outcome = await this.#send(url);
      this.#stopped();
      let failure: string;
      if ('failure' in outcome) failure = outcome.failure;
      else {
        this.#learnLimit(outcome.headers);
        const { status } = outcome;
        if (status === 429) {
          rateLimited++;
          if (rateLimited > (this.#options.maxRateLimited ?? 20))
            throw new SourceUnavailable(`the source kept answering 429 for ${path}`);
          const wait = retryAfterMs(outcome.headers.get('retry-after'), nowMillis());
          if (wait > (this.#options.maxWaitMs ?? Number.POSITIVE_INFINITY))
            throw new SourceUnavailable(
              `the source asked to wait ${wait} ms for ${path}`,
              nowMillis() + wait,
            );
          // No request of this client before it: the pace's next slot is past the wait.
          this.#nextAt = Math.max(this.#nextAt, nowMillis() + wait);
          continue;
        }
        if (status === 401 || status === 403) throw new SourceAuthFailed(status);
        if (status >= 200 && status < 300) {
          const body = parseJson(outcome.text);
          if (body !== undefined) return { body, headers: outcome.headers };
          failure = 'an answer that is not JSON';
        } else if (status >= 500) failure = `HTTP ${status}`;
        else throw new SourceAnswered(status, path);
      }
      failures++;
      if (failures >= maxTries)
        throw new SourceUnavailable(`the source is unavailable (${failure}, ${failures} tries) for ${path}`);
      await sleep(Math.min(MAX_BACKOFF_MS, 1_000 * 2 ** (failures - 1)), this.#options.signal);
      this.#stopped();
    }
  }

  #resolve(pathOrUrl: string): URL {
    let url: URL;
    try {
      url = new URL(pathOrUrl, this.origin);
    } catch {
      throw new SourceHostRefused('a source URL that does not parse was refused');
    }
    if (url.origin !== this.origin)
      throw new SourceHostRefused(`a URL on another host than the source's (${url.host}) was refused`);
    return url;
  }

  /**
   * Takes this client's next slot and waits for it: requests spaced evenly at the share of the limit, no burst
   * (a slot is taken before the wait, so requests asked for at once leave one after another).
   */
  async #pace(): Promise<void> {
    const now = nowMillis();
    const slot = Math.max(now, this.#nextAt);
    this.#nextAt = slot + 60_000 / (this.#perMinute * this.#share);
    if (slot > now) await sleep(slot - now, this.#options.signal);
    this.#stopped();
  }

  #learnLimit(headers: Headers): void {
    for (const name of this.#options.limitHeaders ?? LIMIT_HEADERS) {
      const stated = Number(/^\s*(\d+)/.exec(headers.get(name) ?? '')?.[1]);
      if (stated > 0) {
        this.#perMinute = stated;
        return;
      }
    }
  }

  #stopped(): void {
    if (this.#options.signal?.aborted) throw new SourceUnavailable('the read was stopped');
  }

  /** One GET, cut at the timeout (the clock's); a failure is a reason without the request's headers. */
  #send(url: URL): Promise<Outcome> {
    const limit = new AbortController();
    const timeoutMs = this.#options.timeoutMs ?? 30_000;
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const finish = (outcome: Outcome) => {
        if (settled) return;
        settled = true;
        limit.abort();
        if ('failure' in outcome) request.destroy();
        resolve(outcome);
      };
      const client = url.protocol === 'https:' ? https : http;
      const request = client.request(url, {
        method: 'GET',
        agent: agents[url.protocol as 'http:' | 'https:'],
        headers: {
          authorization: this.#options.authorization,
          accept: 'application/json',
          'user-agent': 'deskpipe-import',
        },
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_BODY_BYTES) finish({ failure: 'an answer over 64 MiB' });
          else chunks.push(chunk);
        });
        response.on('end', () =>
          finish({
            status: response.statusCode ?? 0,
            headers: headersOf(response.headers),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', () => finish({ failure: 'the answer was cut' }));
      });
      request.on('error', (error: NodeJS.ErrnoException) =>
        finish({ failure: `a network error (${error.code ?? 'unknown'})` }),
      );
      request.end();
      const stop = AbortSignal.any([limit.signal, ...(this.#options.signal ? [this.#options.signal] : [])]);
      void sleep(timeoutMs, stop).then(() => finish({ failure: `no answer within ${timeoutMs} ms` }));
    });
  }
}

function headersOf(raw: http.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

function parseJson(text: string): unknown {
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
