import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { ROOT } from '#infra/local/environment.ts';
import { LocalGateway } from '#infra/local/gateway.ts';
import { checkAnswer } from './contract.ts';
import { faultRequestHeaders } from './faults.ts';

/** The local gateway on a free port, as `npm start` runs it, for tests over real HTTP. */
export async function startGateway(authCacheTtlSeconds = 0) {
  // Not warmed: each handler module is loaded by the first request it serves, so a file loads only the
  // functions it calls (npm start warms them all). Warming every one cost each of the 81 files that use a gateway
  // ~0.7 s of CPU (six api files: 38.6 s of CPU warmed, 34.5 s lazy).
  const gateway = new LocalGateway({ authCacheTtlSeconds, root: ROOT });
  const server: Server = await gateway.listen(0);
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function call(
    method: string,
    path: string,
    options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) {
    // Inside a withFault run, the run's request id: the handlers serving it count and fail its calls (faults.ts).
    const headers: Record<string, string> = {
      ...options.headers,
      ...faultRequestHeaders(options.headers ?? {}),
    };
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    // Every answer is one the OpenAPI document describes (test/support/contract.ts).
    checkAnswer({ method, path, status: response.status, headers: response.headers, text });
    const json = /^application\/json/.test(response.headers.get('content-type') ?? '');
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text && json ? JSON.parse(text) : undefined,
    };
  }

  return {
    baseUrl,
    call,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type Gateway = Awaited<ReturnType<typeof startGateway>>;

/**
 * The local gateway for the tests of this file (or of the describe block it is called in): started before
 * them, closed after them. Use it from tests and hooks, not while the file is being collected.
 */
export function useGateway(authCacheTtlSeconds = 0): Gateway {
  let started: Gateway | undefined;
  beforeAll(async () => {
    started = await startGateway(authCacheTtlSeconds);
  });
  afterAll(() => started?.close());
  const running = () => {
    if (!started) throw new Error('useGateway(): the gateway is not running outside tests and hooks');
    return started;
  };
  return {
    get baseUrl() {
      return running().baseUrl;
    },
    call: (...args) => running().call(...args),
    close: () => running().close(),
  };
}

/** A gateway's answer. */
export type Answer = Awaited<ReturnType<Gateway['call']>>;

/** `call(method, path, body?, headers?)` through `gateway` with `key`: the short form a file's tests send with. */
export function keyedCaller(gateway: Gateway, key: string) {
  return (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer> =>
    gateway.call(method, path, {
      key,
      ...(body !== undefined ? { body } : {}),
      ...(headers ? { headers } : {}),
    });
}
