import { createConnection, createServer, type Server } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import {
  type DynamoDbLocal,
  ensureTable,
  freePort,
  startDynamoDbLocal,
} from '#infra/local/dynamodb-local.ts';
import { type Service, startService } from '#test/support/service.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * `npm start` on a store that is slow to answer at first (a cold JIT on a busy machine): its bootstrap's first
 * calls miss the client's time limit and answer 503, and npm start tries again instead of exiting. The store is
 * reached through a proxy that holds every answer back for SLOW_MS while the first SLOW_FOR_MS last.
 */
const SLOW_MS = 1_500;
const SLOW_FOR_MS = 6_000;

let store: DynamoDbLocal | undefined;
let proxy: Server | undefined;
let service: Service | undefined;

afterAll(async () => {
  await service?.stop();
  await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
  await store?.stop();
});

/** A TCP proxy to `target` that delays the answers it relays by SLOW_MS until SLOW_FOR_MS have passed. */
async function slowAtFirst(target: URL): Promise<string> {
  const started = Date.now();
  const port = await freePort();
  proxy = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    client.pipe(upstream);
    upstream.on('data', (chunk) => {
      const delay = Date.now() - started < SLOW_FOR_MS ? SLOW_MS : 0;
      setTimeout(() => client.destroyed || client.write(chunk), delay);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', () => setTimeout(close, SLOW_MS));
  });
  await new Promise<void>((resolve) => proxy?.listen(port, '127.0.0.1', resolve));
  return `http://127.0.0.1:${port}`;
}

it('comes up once a store that answered too slowly at first answers in time', {
  timeout: 120_000,
}, async () => {
  store = await startDynamoDbLocal({ port: 0 });
  await ensureTable(store.endpoint, 'deskpipe-warm-up');
  const endpoint = await slowAtFirst(new URL(store.endpoint));
  const startedAt = Date.now();
  service = await startService({
    DYNAMODB_ENDPOINT: endpoint,
    TABLE_NAME: 'deskpipe-warm-up',
    // One attempt of 1 s a call: every call answers 503 while the proxy holds answers back 1.5 s.
    DYNAMODB_REQUEST_TIMEOUT_MS: '1000',
    DYNAMODB_MAX_ATTEMPTS: '1',
  });
  // It could not have come up before the store answered in time.
  expect(Date.now() - startedAt).toBeGreaterThan(SLOW_FOR_MS - 2_000);
  expect(service.apiKey).toMatch(/^dpk_/);
  // Up, it answers. A store call past the 1 s limit is a 503 still (on a machine loaded by a second test run,
  // DynamoDB Local took over 500 ms for a read: a fresh-clone run beside another answered 503 here), which a client
  // sends again: the service answers 200 within seconds, never stays down.
  const status = await waitFor(
    async () => {
      const answer = await fetch(`${service?.baseUrl}/api/pipelines`, {
        headers: { authorization: `Bearer ${service?.apiKey}` },
      });
      return answer.status === 503 ? undefined : answer.status;
    },
    { timeout: 20_000, interval: 200, label: 'a 200 from the service once up' },
  );
  expect(status).toBe(200);
});
