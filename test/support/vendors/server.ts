import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { clock } from '#lib/time.ts';
import { type ManualClock, parkOnClock } from '#test/support/clock.ts';

/**
 * A local server speaking a vendor's API for the import sources' tests (127.0.0.1, port 0): a route answers each
 * request from the vendor's documented shapes, and the test queues faults before it (a 429 with Retry-After, a 5xx,
 * a 401, a slow answer). Every request is recorded with its time on the service's clock (the test's manual clock),
 * so a test sees when each one came. A slow answer waits on that clock (parkOnClock: the clock does not wait for it).
 */

export interface RecordedRequest {
  method: string;
  /** Path and query, as sent. */
  path: string;
  /** Epoch ms of the clock when it came. */
  at: number;
  authorization: string | undefined;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** A fault answered instead of (or, `delayMs`, before) the route's answer. */
export type Fault = Answer | { delayMs: number };

export type Route = (url: URL, request: http.IncomingMessage) => Answer;

export interface VendorServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Faults answered to the next requests, one each, in order; `null` lets one request through. */
  readonly faults: (Fault | null)[];
  /** Headers added to every answer (a stated rate limit). */
  readonly headers: Record<string, string>;
  close(): Promise<void>;
}

export async function startVendorServer(route: Route): Promise<VendorServer> {
  const requests: RecordedRequest[] = [];
  const faults: (Fault | null)[] = [];
  const headers: Record<string, string> = {};
  const answer = (response: http.ServerResponse, { status, headers: own, body }: Answer) => {
    // A Buffer body is bytes as they are (an attachment's); anything else JSON.
    const bytes = Buffer.isBuffer(body);
    const type = bytes ? 'application/octet-stream' : 'application/json';
    response.writeHead(status, { 'content-type': type, ...headers, ...own });
    response.end(bytes ? body : body === undefined ? '' : JSON.stringify(body));
  };
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', `http://${request.headers.host}`);
    requests.push({
      method: request.method ?? 'GET',
      path: `${url.pathname}${url.search}`,
      at: clock().nowMs(),
      authorization: request.headers.authorization,
    });
    const fault = faults.shift() ?? null;
    if (fault && 'delayMs' in fault) {
      parkOnClock(response);
      void clock()
        .sleep(fault.delayMs)
        .then(() => {
          if (!response.destroyed) answer(response, route(url, request));
        });
      return;
    }
    answer(response, fault ?? route(url, request));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    headers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs `work` to its end on the manual clock: moves the clock from waiter to waiter until it settles. */
export async function onClock<T>(manual: ManualClock, work: Promise<T>, within = 60 * 60_000): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  work.then(
    (value) => {
      outcome = { value };
    },
    (error: unknown) => {
      outcome = { error };
    },
  );
  await manual.advanceUntil(() => outcome, { within });
  if (outcome && 'value' in outcome) return outcome.value;
  throw (outcome as { error: unknown }).error;
}
