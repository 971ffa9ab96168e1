import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { runCommand } from '#infra/admin/commands.ts';
import { GATEWAY_MAX_BODY_BYTES, gatewayAnswers } from '#infra/api-contract.ts';
import { GATEWAY_KEEP_ALIVE_MS } from '#infra/local/gateway.ts';
import { createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { startGateway, useGateway } from '#test/support/http.ts';

describe('local gateway over HTTP', () => {
  const gateway = useGateway();
  const account = useTestAccount();

  it('serves GET /api/pipelines with a valid key', async () => {
    const response = await gateway.call('GET', '/api/pipelines', { key: account.apiKey });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.body.data[0]).toMatchObject({ name: 'Sales', is_default: true });
  });

  it('keeps an idle connection open 65 s and says so, so a paused client closes it first', async () => {
    const keepAlive = await new Promise<string | undefined>((resolve, reject) => {
      const req = request(`${gateway.baseUrl}/api/pipelines`, {
        headers: { Authorization: `Bearer ${account.apiKey}`, Connection: 'keep-alive' },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => {
          req.destroy();
          resolve(String(res.headers['keep-alive']));
        });
      });
      req.on('error', reject);
      req.end();
    });
    // Node's default was `timeout=5`: a client paused 5 s met connections closed under it (store-death, side by side).
    expect(keepAlive).toBe(`timeout=${GATEWAY_KEEP_ALIVE_MS / 1000}`);
    expect(GATEWAY_KEEP_ALIVE_MS).toBeGreaterThanOrEqual(60_000);
  });

  it('echoes a client X-Request-Id', async () => {
    const response = await gateway.call('GET', '/api/pipelines', {
      key: account.apiKey,
      headers: { 'X-Request-Id': 'trace-123' },
    });
    expect(response.headers.get('x-request-id')).toBe('trace-123');
  });

  it('answers 401 without a key, with a bad key, and with a malformed header', async () => {
    for (const headers of [
      {},
      { Authorization: 'Bearer dpk_nope' },
      { Authorization: 'Token abc' },
    ] as Record<string, string>[]) {
      const response = await gateway.call('GET', '/api/pipelines', { headers });
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ message: 'Unauthenticated.' });
      expect(response.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('answers 403 to an account on the Startup plan', async () => {
    const startup = await createTestAccount({ plan: 'startup' });
    const response = await gateway.call('GET', '/api/pipelines', { key: startup.apiKey });
    expect(response.status).toBe(403);
    expect(response.body.message).toMatch(/Pro and Enterprise/);
  });

  it('answers 401 to a revoked key', async () => {
    const other = await createTestAccount();
    expect((await gateway.call('GET', '/api/pipelines', { key: other.apiKey })).status).toBe(200);
    const { keys } = (await runCommand(['keys', 'list', other.slug])) as { keys: { id: string }[] };
    await runCommand(['keys', 'revoke', keys[0]?.id ?? '']);
    const response = await gateway.call('GET', '/api/pipelines', { key: other.apiKey });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ message: 'Unauthenticated.' });
  });

  it('answers 404 JSON to an unknown route, before any authentication', async () => {
    const response = await gateway.call('GET', '/api/nope');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: 'Not found.' });
  });

  it('answers 405 JSON with Allow to a wrong method on a known path', async () => {
    const response = await gateway.call('DELETE', '/api/pipelines', { key: account.apiKey });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(response.body.message).toBeTruthy();
  });

  it('answers 413 to a body over the gateway limit without reading it all', async () => {
    const response = await gateway.call('DELETE', '/api/pipelines', {
      key: account.apiKey,
      body: 'x'.repeat(10 * 1024 * 1024 + 1),
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(response.status).toBe(413);
    expect(response.body.message).toMatch(/1 MiB/);
    // A client announcing 64 MiB and stopping just past the limit gets its answer without sending the rest.
    const partial = await sendPartially(
      `${gateway.baseUrl}/api/pipelines`,
      64 * 1024 * 1024,
      GATEWAY_MAX_BODY_BYTES + 1,
    );
    expect(partial).toEqual({ status: 413, body: gatewayAnswers.REQUEST_TOO_LARGE.body });
  });
});

describe('authorizer caching in the local gateway', () => {
  it('keeps answering from the cache for the TTL, as API Gateway does, and not when TTL is 0', async () => {
    const cached = await startGateway(60);
    const uncached = await startGateway(0);
    try {
      const account = await createTestAccount();
      expect((await cached.call('GET', '/api/pipelines', { key: account.apiKey })).status).toBe(200);
      expect((await uncached.call('GET', '/api/pipelines', { key: account.apiKey })).status).toBe(200);
      const { keys } = (await runCommand(['keys', 'list', account.slug])) as { keys: { id: string }[] };
      await runCommand(['keys', 'revoke', keys[0]?.id ?? '']);
      // Within the TTL a revoked key still passes a caching gateway (bounded by the TTL, at most 60 s).
      expect((await cached.call('GET', '/api/pipelines', { key: account.apiKey })).status).toBe(200);
      expect((await uncached.call('GET', '/api/pipelines', { key: account.apiKey })).status).toBe(401);
    } finally {
      await cached.close();
      await uncached.close();
    }
  });
});

/**
 * Announces `announced` bytes, sends `sent` of them and waits for the answer without finishing the body (a server
 * that reads the whole body would wait for bytes that never come: the test's timeout then fails it).
 */
function sendPartially(url: string, announced: number, sent: number) {
  return new Promise<{ status: number | undefined; body: unknown }>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'Content-Type': 'text/plain', 'Content-Length': announced } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        });
      },
    );
    req.on('error', (error) => {
      reject(error);
    });
    req.write(Buffer.alloc(sent, 'x'));
  });
}
