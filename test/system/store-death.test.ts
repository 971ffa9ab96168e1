import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkAnswer } from '#test/support/contract.ts';
import { retrying, retryingRead, WRITE_AGAIN } from '#test/support/retries.ts';
import { javaPids, type Service, startService, storeBarrier } from '#test/support/service.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * `npm start` under load while its embedded DynamoDB is killed (issue 9): the service says so, restarts the
 * store with its data, answers 503 meanwhile (never a hang, never a 500), and once the clients have retried
 * with their Idempotency-Keys every ticket exists exactly once and is fully indexed. SIGTERM stops it all.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'deskpipe-death-'));
let service: Service | undefined;
afterAll(async () => {
  await service?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start when its store dies', () => {
  it('restarts the store, keeps every acknowledged ticket whole, and stops everything on SIGTERM', async () => {
    const started = await startService({
      DYNAMODB_DATA_DIR: dataDir,
      TABLE_NAME: 'deskpipe-death',
      AUTH_CACHE_TTL_SECONDS: '0',
      LOG_LEVEL: 'info',
    });
    service = started;
    const { child, dynamoPort, apiKey, env, baseUrl: base } = started;
    const stderr = () => started.stderr();

    const statuses: number[] = [];
    const post = async (tag: string, heavy: boolean) => {
      const started = Date.now();
      const response = await fetch(`${base}/api/tickets`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'Content-Type': 'application/json',
          'Idempotency-Key': tag,
        },
        body: JSON.stringify({
          subject: heavy ? `${Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ')} ${tag}` : `Hi ${tag}`,
          description: 'd',
          requester_email: `${tag}@death.test`,
          custom_fields: heavy
            ? Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, tag]))
            : {},
        }),
      });
      const text = await response.text();
      // Under the store's death too, every answer is one the OpenAPI document describes.
      checkAnswer({
        method: 'POST',
        path: '/api/tickets',
        status: response.status,
        headers: response.headers,
        text,
      });
      statuses.push(response.status);
      expect(Date.now() - started, 'a request never hangs').toBeLessThan(15_000);
      return { status: response.status, headers: response.headers };
    };
    /** A client that retries with its key until the ticket is acknowledged. */
    const client = async (tag: string, heavy: boolean) => {
      // 429: the demo account past its edge burst (docs/decisions.md, "Rate limits"), its Retry-After 1 s.
      const { status } = await retrying(() => post(tag, heavy), WRITE_AGAIN, 400, 100);
      expect(status, `${tag} acknowledged`).toBe(201);
      return tag;
    };

    const tags: string[] = [];
    const ackedAt = new Map<string, number>();
    let loading = true;
    // A worker that fails (no answer at all: the service gone?) is said at once, with the service's last output.
    const failures: unknown[] = [];
    const workers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; loading; i++) {
        const tag = `d${randomBytes(5).toString('hex')}`;
        tags.push(await client(tag, (w + i) % 2 === 0));
        ackedAt.set(tag, Date.now());
      }
    }).map((worker) => worker.catch((error: unknown) => failures.push(error)));
    const context = () =>
      `${failures.length} workers failed (${failures.map((f) => `${f}; ${(f as Error).cause ?? ''}`).join(' | ')}); ${started.tail()}`;
    // The store dies under load: once four tickets have been acknowledged.
    await waitFor(() => tags.length >= 4, { timeout: 120_000, label: 'the load to flow', context });
    const [javaPid] = javaPids(dynamoPort);
    expect(javaPid).toBeGreaterThan(0);
    const barrierSentAt = Date.now();
    await storeBarrier(dynamoPort, env.TABLE_NAME as string);
    process.kill(javaPid as number, 'SIGKILL');
    await waitFor(() => /DynamoDB Local restarted/.test(stderr()), {
      timeout: 60_000,
      label: 'the restart',
      context,
    });
    expect(stderr()).toMatch(/DynamoDB Local exited unexpectedly/);
    // The load goes on until the restarted store has acknowledged tickets again.
    const atRestart = tags.length;
    await waitFor(() => tags.length > atRestart, {
      timeout: 120_000,
      label: 'a ticket after the restart',
      context,
    });
    loading = false;
    await Promise.all(workers);
    expect(failures, context()).toEqual([]);

    expect(statuses, stderr()).toContain(503);
    expect(statuses.every((s) => [201, 503, 409, 429].includes(s))).toBe(true);
    /** A list read as a client reads it: a 429 (the clients' writes took the minute's budget) waits its Retry-After. */
    const get = async (query: string) => {
      const path = `/api/tickets?per_page=100&${query}`;
      const { status, headers, text } = await retryingRead(`${base}${path}`, apiKey);
      checkAnswer({ method: 'GET', path, status, headers, text });
      expect(status).toBe(200);
      return JSON.parse(text) as { meta: { total: number }; data: unknown[] };
    };
    expect(tags.length).toBeGreaterThanOrEqual(4); // every worker got at least one ticket through
    // A ticket acknowledged after the barrier was sent may have lost its commit to the kill (storeBarrier): the
    // whole commit (ticket, counters, kept answer), never a part of it, so it is whole or absent in every view.
    // Every other acknowledged ticket is whole.
    const unsure = new Set(tags.filter((t) => (ackedAt.get(t) ?? 0) >= barrierSentAt));
    let lostToTheStore = 0;
    for (const tag of tags) {
      if (!unsure.has(tag)) continue;
      const found = (await get(`search=${tag}`)).meta.total;
      const byEmail = await get(`requester_email=${tag}%40death.test`);
      expect([found, byEmail.meta.total, byEmail.data.length], `${tag}: whole or absent`).toEqual(
        found === 0 ? [0, 0, 0] : [1, 1, 1],
      );
      if (found === 0) lostToTheStore++;
    }
    for (const tag of tags) {
      if (unsure.has(tag)) continue;
      for (const query of [
        `search=${tag}`,
        `requester_email=${tag}%40death.test`,
        'status=open&search=w29',
      ]) {
        if (query.startsWith('status') && tag !== tags[0]) continue;
        const page = await get(query);
        expect(page.data.length, `${tag} ${query}`).toBe(Math.min(page.meta.total, 100));
      }
      expect((await get(`search=${tag}`)).meta.total, tag).toBe(1);
      expect((await get(`requester_email=${tag}%40death.test`)).meta.total, tag).toBe(1);
    }
    const all = await get('search=death.test');
    expect(all.meta.total).toBe(tags.length - lostToTheStore);
    expect((await get('')).meta.total).toBe(tags.length - lostToTheStore);

    // A stalled store (the process stopped, its socket open) gets a bounded 503, not a hang.
    const [restartedPid] = javaPids(dynamoPort);
    process.kill(restartedPid as number, 'SIGSTOP');
    try {
      const started = Date.now();
      const stalled = await fetch(`${base}/api/pipelines`, {
        headers: { Authorization: `Bearer ${apiKey}` },
      });
      const text = await stalled.text();
      checkAnswer({
        method: 'GET',
        path: '/api/pipelines',
        status: stalled.status,
        headers: stalled.headers,
        text,
      });
      expect(stalled.status).toBe(503);
      expect(stalled.headers.get('retry-after')).toBe('1');
      expect(JSON.parse(text)).toEqual({ message: 'Service temporarily unavailable.' });
      expect(Date.now() - started).toBeLessThan(9_000);
    } finally {
      process.kill(restartedPid as number, 'SIGCONT');
    }
    // The authorizer's failure is in the log (the client only sees 503).
    expect(stderr()).toMatch(/Service temporarily unavailable/);

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(javaPids(dynamoPort)).toEqual([]);
  }, 360_000);
});
