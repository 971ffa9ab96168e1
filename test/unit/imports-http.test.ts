import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationFailed } from '#lib/errors.ts';
import {
  closeSourceConnections,
  SourceAnswered,
  SourceAuthFailed,
  SourceHostRefused,
  SourceHttp,
  type SourceHttpOptions,
  SourceUnavailable,
  sourceBaseUrl,
} from '#lib/imports/http.ts';
import { useManualClock } from '#test/support/clock.ts';
import { onClock, startVendorServer, type VendorServer } from '#test/support/vendors/server.ts';

const TOKEN = 'Basic c2VjcmV0LXRva2VuLXZhbHVl';
const clockNow = useManualClock();
let server: VendorServer;

beforeEach(async () => {
  server = await startVendorServer((url) => ({ status: 200, body: { path: url.pathname } }));
});
afterEach(async () => {
  closeSourceConnections();
  await server.close();
});

const client = (options: Partial<SourceHttpOptions> = {}) =>
  new SourceHttp({ baseUrl: server.url, authorization: TOKEN, publishedPerMinute: 60, ...options });
const run = <T>(work: Promise<T>) => onClock(clockNow(), work);
const gaps = () => server.requests.slice(1).map((r, i) => r.at - (server.requests[i]?.at ?? 0));

describe('sourceBaseUrl', () => {
  it("is the vendor's host for a checked name, and the operator's override when set", () => {
    expect(sourceBaseUrl('zendesk', 'acme', {})).toBe('https://acme.zendesk.com');
    expect(sourceBaseUrl('freshdesk', 'acme-2', {})).toBe('https://acme-2.freshdesk.com');
    const env = { IMPORT_ZENDESK_URL: 'http://127.0.0.1:4010/' };
    expect(sourceBaseUrl('zendesk', 'acme', env)).toBe('http://127.0.0.1:4010');
    expect(sourceBaseUrl('freshdesk', 'acme', env)).toBe('https://acme.freshdesk.com');
  });

  it('refuses a name that would reach another host, naming the field', () => {
    for (const [vendor, field] of [
      ['zendesk', 'subdomain'],
      ['freshdesk', 'domain'],
    ] as const) {
      for (const name of ['evil.com/x', 'a.b', '-acme', 'Acme', '', 'x'.repeat(64), 'acme@host']) {
        const error = (() => {
          try {
            sourceBaseUrl(vendor, name, {});
          } catch (caught) {
            return caught;
          }
        })();
        expect(error, name).toBeInstanceOf(ValidationFailed);
        expect(Object.keys((error as ValidationFailed).errors)).toEqual([field]);
      }
    }
  });
});

describe('SourceHttp', () => {
  it('paces at half the published rate: 60 a minute is one request every 2 s', async () => {
    const http = client();
    await run(Promise.all([1, 2, 3, 4].map((n) => http.getJson(`/n/${n}`))));
    expect(server.requests).toHaveLength(4);
    expect(gaps()).toEqual([2_000, 2_000, 2_000]);
  });

  it('paces at the share of the limit the answers state, once seen (X-Rate-Limit, ratelimit-limit, X-Ratelimit-Total)', async () => {
    for (const header of ['X-Rate-Limit', 'ratelimit-limit', 'X-Ratelimit-Total']) {
      server.requests.length = 0;
      server.headers[header] = '600';
      const http = client({ rateShare: 0.25 });
      for (let n = 0; n < 3; n++) await run(http.getJson('/x'));
      // The first pause is the published 60's at a quarter (4 s); then 600's at a quarter: 150 a minute, 400 ms.
      expect(gaps(), header).toEqual([4_000, 400]);
      expect(http.limitPerMinute).toBe(600);
      delete server.headers[header];
    }
  });

  it("honours a 429's Retry-After: no request before it has elapsed on the clock", async () => {
    server.faults.push(
      { status: 429, headers: { 'Retry-After': '7' } },
      { status: 429, headers: { 'Retry-After': '3' } },
    );
    const answer = await run(client({ publishedPerMinute: 6_000 }).getJson('/tickets'));
    expect(answer.body).toEqual({ path: '/tickets' });
    expect(server.requests).toHaveLength(3);
    expect(gaps()).toEqual([7_000, 3_000]);
  });

  it('a Retry-After longer than a run may wait is SourceUnavailable with when to ask again, nothing sent before', async () => {
    server.faults.push({ status: 429, headers: { 'Retry-After': '120' } });
    const started = clockNow().nowMs();
    const failed = run(client({ publishedPerMinute: 6_000, maxWaitMs: 30_000 }).getJson('/tickets'));
    await expect(failed).rejects.toBeInstanceOf(SourceUnavailable);
    await expect(failed).rejects.toMatchObject({ retryAtMs: started + 120_000 });
    expect(server.requests).toHaveLength(1);
  });

  it('asks again after a 5xx with a growing backoff, and gives up with SourceUnavailable after its tries', async () => {
    server.faults.push({ status: 503 }, { status: 500 });
    expect((await run(client({ publishedPerMinute: 6_000 }).getJson('/a'))).body).toEqual({ path: '/a' });
    expect(gaps()).toEqual([1_000, 2_000]);

    server.requests.length = 0;
    server.faults.push(...Array.from({ length: 5 }, () => ({ status: 502 })));
    const failed = run(client({ publishedPerMinute: 6_000 }).getJson('/b'));
    await expect(failed).rejects.toBeInstanceOf(SourceUnavailable);
    await expect(failed).rejects.toThrow(/HTTP 502, 5 tries/);
    expect(server.requests).toHaveLength(5);
  });

  it('asks again after a timeout (a slow answer cut at its limit on the clock)', async () => {
    server.faults.push({ delayMs: 60_000 });
    const answer = await run(client({ timeoutMs: 10_000, publishedPerMinute: 6_000 }).getJson('/slow'));
    expect(answer.body).toEqual({ path: '/slow' });
    expect(gaps()).toEqual([11_000]);
  });

  it('fails at once on 401 and 403 with SourceAuthFailed, the credentials in no message', async () => {
    for (const status of [401, 403]) {
      server.requests.length = 0;
      server.faults.push({ status, body: { error: "Couldn't authenticate you" } });
      const error = await run(client().getJson('/me')).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(SourceAuthFailed);
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]?.authorization).toBe(TOKEN);
      const said = `${String(error)} ${(error as Error).stack} ${JSON.stringify(error)}`;
      expect(said).toContain(`HTTP ${status}`);
      expect(said).not.toContain('c2VjcmV0');
    }
  });

  it('throws SourceAnswered for another 4xx, without asking again', async () => {
    server.faults.push({ status: 404 });
    await expect(run(client().getJson('/gone'))).rejects.toBeInstanceOf(SourceAnswered);
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a URL on another host (a next page elsewhere) without any request', async () => {
    const http = client();
    for (const url of ['http://evil.test/api', 'https://127.0.0.1/api', '//evil.test/x']) {
      await expect(run(http.getJson(url)), url).rejects.toBeInstanceOf(SourceHostRefused);
    }
    await run(http.getJson(`${server.url}/same/origin?x=1`));
    expect(server.requests.map((r) => r.path)).toEqual(['/same/origin?x=1']);
  });
});
