import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * The bench's webhook receivers: one HTTP server on 127.0.0.1, one path per endpoint (`/hook/<n>`), each verifying
 * its deliveries with the standardwebhooks library (the code receivers run) under that endpoint's secret, and
 * answering 200 at once. It keeps, per path and webhook-id, when each delivery arrived (performance.now(), the
 * clock the bench times the changes with), and the parsed body of the first one, so that a delivery can be matched
 * to the change that made its event. Test receivers (test/support/webhooks.ts) keep more; this one keeps what the
 * bench reads, so that it costs little per delivery.
 */
export interface Arrival {
  /** performance.now() when the request's body had arrived and was verified. */
  at: number;
  /** How many times this webhook-id arrived at this path. */
  count: number;
  body: { id: string; type: string; data: { object: { uuid?: string }; version: number } };
}

export interface Receivers {
  /** The URL of path n. */
  url(n: number): string;
  /** Verifies path n's deliveries with this secret (the one POST /api/webhooks answered). */
  useSecret(n: number, secret: string): void;
  /** Arrivals of path n, by webhook-id. */
  arrivals(n: number): Map<string, Arrival>;
  /**
   * Deliveries received (every arrival, repeats included), those that failed verification, and the connections
   * the receivers accepted (keep-alive: fewer than the deliveries).
   */
  readonly totals: { received: number; unverified: number; connections: number };
  close(): Promise<void>;
}

export async function startReceivers(): Promise<Receivers> {
  const hooks = new Map<number, Webhook>();
  const byPath = new Map<number, Map<string, Arrival>>();
  const totals = { received: 0, unverified: 0, connections: 0 };
  // Each answer waits this long (BENCH_WEBHOOK_RECEIVER_MS, default 0): a receiver's own latency, as real ones have.
  const delayMs = Number(process.env.BENCH_WEBHOOK_RECEIVER_MS ?? 0);
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const n = Number(/^\/hook\/(\d+)$/.exec(request.url ?? '')?.[1] ?? -1);
      const hook = hooks.get(n);
      const body = Buffer.concat(chunks).toString('utf8');
      totals.received++;
      let verified = false;
      try {
        hook?.verify(body, request.headers as Record<string, string>);
        verified = hook !== undefined;
      } catch {}
      const at = performance.now();
      if (!verified) {
        totals.unverified++;
      } else {
        const arrivals = byPath.get(n) ?? new Map<string, Arrival>();
        byPath.set(n, arrivals);
        const id = String(request.headers['webhook-id']);
        const seen = arrivals.get(id);
        if (seen) seen.count++;
        else arrivals.set(id, { at, count: 1, body: JSON.parse(body) });
      }
      if (delayMs > 0) setTimeout(() => response.writeHead(200).end(), delayMs);
      else response.writeHead(200).end();
    });
  });
  // Connections are kept open as Node's server does by default (5 s idle): a dispatcher with keep-alive reuses them.
  server.on('connection', () => totals.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (n) => `http://127.0.0.1:${port}/hook/${n}`,
    useSecret: (n, secret) => {
      hooks.set(n, new Webhook(secret));
    },
    arrivals: (n) => byPath.get(n) ?? new Map(),
    totals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
