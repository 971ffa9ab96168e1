import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { checkAnswer } from '#test/support/contract.ts';
import type { Gateway } from '#test/support/http.ts';
import { checkFilter, fetchAll, type Shown } from '#test/support/list-model.ts';
import { retrying, WRITE_AGAIN } from '#test/support/retries.ts';
import { javaPids, type Service, startService } from '#test/support/service.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * `npm start` under keyed writes while its DynamoDB Local is stalled (SIGSTOP: the process stops, its socket
 * stays open) for 15 s (issue 18): every request answers within the request deadline of docs/decisions.md
 * (the function's 10 s less 1.5 s), with its change or with 503, never later; once the store runs again the
 * clients' retries with the same Idempotency-Keys land each create and each update exactly once, every index
 * complete.
 */
const STALL_MS = 15_000;
/**
 * The documented bound (decisions.md: 8.5 s after the request starts), with room for a loaded machine's
 * scheduling and the gateway's own work; still short of the function's 10 s timeout.
 */
const ANSWER_BOUND_MS = 9_500;

let service: Service | undefined;
afterAll(async () => {
  await service?.stop();
});

interface Answer {
  what: string;
  status: number;
  ms: number;
  /** Whether the store was stopped at some point while the request ran. */
  stalled: boolean;
}

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}w${i}`).join(' ');

describe('npm start when its store stalls', () => {
  it('answers every request within the deadline, and the keyed retries land each change exactly once', async () => {
    // The deployed authorizer cache (AUTH_CACHE_TTL_SECONDS unset): a stalled store does not also stall authorization.
    const started = await startService({ TABLE_NAME: 'deskpipe-stall', LOG_LEVEL: 'silent' }, [
      '--in-memory',
    ]);
    service = started;
    const { dynamoPort, apiKey: key, baseUrl } = started;
    const stderr = () => started.stderr();

    let stalledNow = false;
    const answers: Answer[] = [];
    const call: Gateway['call'] = async (method, path, options = {}) => {
      const headers: Record<string, string> = { Authorization: `Bearer ${key}`, ...options.headers };
      if (options.body !== undefined) headers['Content-Type'] = 'application/json';
      const started = performance.now();
      let stalled = stalledNow;
      const watch = setInterval(() => {
        stalled ||= stalledNow;
      }, 20);
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      }).finally(() => clearInterval(watch));
      const text = await response.text();
      const ms = performance.now() - started;
      checkAnswer({ method, path, status: response.status, headers: response.headers, text });
      if (method !== 'GET') answers.push({ what: `${method} ${path}`, status: response.status, ms, stalled });
      return {
        status: response.status,
        headers: response.headers,
        text,
        body: text ? JSON.parse(text) : undefined,
      };
    };
    const gateway: Gateway = { baseUrl, call, close: async () => {} };

    /** Sends one change with its key until it is acknowledged: 503 (the store stalled) or 409 (the claim's lease). */
    const untilDone = async (method: string, path: string, body: unknown, done: number) => {
      const idempotencyKey = `k${randomBytes(6).toString('hex')}`;
      const send = async () => {
        const r = await call(method, path, { body, headers: { 'Idempotency-Key': idempotencyKey } });
        if (r.status === 503 || r.status === 429) expect(r.headers.get('retry-after')).toBe('1');
        return r;
      };
      // 429: the demo account past its edge burst (docs/decisions.md, "Rate limits"), its Retry-After 1 s.
      const r = await retrying(send, WRITE_AGAIN, 200, 100);
      expect(r.status, r.text).toBe(done);
      return r;
    };

    // Tickets to update, made before the load.
    const seeded: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call('POST', '/api/tickets', {
        body: { subject: `Seed ${i}`, description: 'd', requester_email: `seed${i}@stall.test` },
      });
      expect(r.status, r.text).toBe(201);
      seeded.push(r.body.ticket.uuid);
    }

    let loading = true;
    const created: { tag: string; uuid: string }[] = [];
    /** Heavy creates: 50 custom fields and a 30-word subject take the path with pre-commit (marked) writes. */
    const creator = async (w: number) => {
      for (let i = 0; loading && i < 12; i++) {
        const tag = `c${w}x${i}${randomBytes(3).toString('hex')}`;
        const r = await untilDone(
          'POST',
          '/api/tickets',
          {
            subject: `${words(30, 's')} ${tag}`,
            description: 'd',
            requester_email: `${tag}@stall.test`,
            custom_fields: Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`k${k}`, tag])),
          },
          201,
        );
        created.push({ tag, uuid: r.body.ticket.uuid });
      }
    };
    /** Keyed updates of one ticket, one after another: each changes 10 custom fields and the subject's words. */
    const updates = new Map<string, { count: number; last: string }>();
    const updater = async (uuid: string) => {
      for (let i = 0; loading && i < 12; i++) {
        const tag = `u${i}${randomBytes(3).toString('hex')}`;
        const r = await untilDone(
          'PATCH',
          `/api/tickets/${uuid}`,
          {
            subject: `${words(10, tag)} ${tag}`,
            priority: (['low', 'medium', 'high', 'urgent'] as const)[i % 4],
            custom_fields: Object.fromEntries(Array.from({ length: 10 }, (_, k) => [`f${k}`, tag])),
          },
          200,
        );
        expect(r.body.ticket.subject).toBe(`${words(10, tag)} ${tag}`);
        updates.set(uuid, { count: (updates.get(uuid)?.count ?? 0) + 1, last: tag });
      }
    };
    const workers = [...[0, 1, 2].map(creator), ...seeded.map(updater)];
    for (const worker of workers) worker.catch(() => {}); // awaited below; a failure meanwhile is not unhandled

    await waitFor(() => answers.length >= 6, { timeout: 30_000, label: 'the load to start' });
    const [javaPid] = javaPids(dynamoPort);
    expect(javaPid).toBeGreaterThan(0);
    process.kill(javaPid as number, 'SIGSTOP');
    stalledNow = true;
    const stalledAt = answers.length;
    try {
      await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    } finally {
      process.kill(javaPid as number, 'SIGCONT');
      stalledNow = false;
    }
    loading = false;
    await Promise.all(workers);

    // The answers of the requests the stall caught: each within the bound, with its change or 503.
    const caught = answers.filter((a) => a.stalled);
    const times = caught.map((a) => Math.round(a.ms)).sort((a, b) => a - b);
    console.log(
      `store stall: ${caught.length} answers while stalled (${answers.length} in all); ms sorted: ${times.join(' ')}`,
    );
    expect(answers.length).toBeGreaterThan(stalledAt);
    expect(caught.some((a) => a.status === 503)).toBe(true);
    for (const a of answers) {
      expect([200, 201, 409, 429, 503], a.what).toContain(a.status);
      expect(a.ms, `${a.what} answered ${a.status} after ${Math.round(a.ms)} ms`).toBeLessThan(
        ANSWER_BOUND_MS,
      );
    }

    // Every change landed exactly once: one ticket per create, one version per update, the last one's fields.
    const shown = await fetchAll(gateway, key, [...created.map((c) => c.uuid), ...seeded]);
    for (const { tag, uuid } of created) {
      const r = await call('GET', `/api/tickets?search=${tag}`);
      expect(r.body.meta.total, tag).toBe(1);
      expect(r.body.data[0].uuid).toBe(uuid);
    }
    for (const uuid of seeded) {
      const done = updates.get(uuid);
      const r = await call('GET', `/api/tickets/${uuid}`);
      expect(r.headers.get('etag'), uuid).toBe(`"${1 + (done?.count ?? 0)}"`);
      if (done) expect(r.body.data.custom_fields.f0).toBe(done.last);
    }
    const total = await call('GET', '/api/tickets?per_page=1');
    expect(total.body.meta.total).toBe(created.length + seeded.length);

    // Every index agrees with the tickets as GET shows them.
    const model: Shown[] = shown;
    const lastUpdate = [...updates.values()][0]?.last ?? 'none';
    const firstTag = created[0]?.tag ?? 'none';
    const mismatches = [];
    for (const filter of [
      {},
      { status: 'open' },
      { priority: 'high' },
      { search: 'sw29' },
      { search: `${lastUpdate}w9` },
      { custom_fields: [['k0', firstTag]] as [string, string][] },
      { custom_fields: [['f0', lastUpdate]] as [string, string][] },
      { requester_email: `${firstTag}@stall.test` },
    ]) {
      mismatches.push(...(await checkFilter(gateway, key, model, filter, 25)));
    }
    expect(mismatches, stderr()).toEqual([]);
    // Stopped as Ctrl-C stops it, the service leaves no store behind.
    await started.stop();
    expect(javaPids(dynamoPort)).toEqual([]);
  }, 110_000);
});
