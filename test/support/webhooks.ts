import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect } from 'vitest';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { type Dispatcher, type DispatcherOptions, startWebhookDispatcher } from '#infra/local/webhooks.ts';
import { eventItems } from '#lib/data/events.ts';
import { webhookKeys } from '#lib/data/keys.ts';
import { batchPutAll, dynamo, tableName } from '#lib/data/store/client.ts';
import { newEndpointId } from '#lib/data/webhooks/endpoint-ids.ts';
import { createEndpoint } from '#lib/data/webhooks/webhooks.ts';
import { every, formatTimestamp, nowMicros, nowMillis, sleep } from '#lib/time.ts';
import type { Endpoint } from '#lib/webhooks/types.ts';
import { createTestAccount } from './accounts.ts';
import { parkOnClock } from './clock.ts';
import { lambdaContext } from './events.ts';
import { useTable } from './file-table.ts';
import type { Gateway } from './http.ts';
import { inserted, streamBatch } from './stream-records.ts';

/**
 * Webhook receivers and the dispatcher for system tests. A receiver is a real HTTP server on 127.0.0.1 that
 * verifies every delivery with the standardwebhooks library (the code receivers run) and records it; what it
 * answers is the test's choice, per delivery.
 */
export interface Delivery {
  webhookId: string;
  timestamp: number;
  /** Epoch ms at which the request arrived. */
  at: number;
  headers: IncomingMessage['headers'];
  body: string;
  /** Whether Webhook.verify accepted it (a delivery that fails verification fails the test that checks this). */
  verified: boolean;
  /** What the receiver answered (null: it never answered). */
  answered: number | null;
  /** Epoch ms at which the answer was sent. */
  answeredAt: number | null;
  /** The address the request was sent to (the receiver's end of its connection), and that connection's number. */
  localAddress: string;
  connection: number;
}

/**
 * What to answer to one delivery: a status (and headers, and `bodyBytes` of body written at once, or `trickle`:
 * a byte at once and one every 100 ms of the service's clock, never ending), or `hang` (never answer).
 */
export type Answer =
  | {
      status: number;
      headers?: Record<string, string>;
      bodyBytes?: number;
      trickle?: boolean;
      /** Answers after this long (of the service's clock: a manual clock's advance). */
      delayMs?: number;
    }
  | 'hang';

export interface Receiver {
  url: string;
  port: number;
  secret: string;
  deliveries: Delivery[];
  /** Connections the receiver accepted (with keep-alive, fewer than its deliveries). */
  readonly connections: number;
  /** Deliveries by webhook-id, in arrival order. */
  byId(): Map<string, Delivery[]>;
  /** Sets what the receiver answers from now on. */
  answer(choose: (delivery: Delivery, index: number) => Answer): void;
  /** Verifies with this secret from now on (one the API answered when the endpoint was registered). */
  useSecret(secret: string): void;
  close(): Promise<void>;
}

export async function startReceiver(
  options: {
    port?: number;
    secret?: string /** Listens on this address (127.0.0.1 by default). */;
    host?: string;
  } = {},
): Promise<Receiver> {
  let secret = options.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  let hook = new Webhook(secret);
  const deliveries: Delivery[] = [];
  let choose: (delivery: Delivery, index: number) => Answer = () => ({ status: 204 });
  let connections = 0;
  const numbers = new WeakMap<object, number>();
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified = false;
      try {
        hook.verify(body, request.headers as Record<string, string>);
        verified = true;
      } catch {}
      const delivery: Delivery = {
        webhookId: String(request.headers['webhook-id']),
        timestamp: Number(request.headers['webhook-timestamp']),
        at: nowMillis(),
        headers: request.headers,
        body,
        verified,
        answered: null,
        answeredAt: null,
        localAddress: String(request.socket.localAddress).replace(/^::ffff:/, ''),
        connection: numbers.get(request.socket) ?? 0,
      };
      deliveries.push(delivery);
      const answer = choose(delivery, deliveries.length - 1);
      // An answer that waits on the clock (or never comes): a manual clock moves on without it.
      if (answer === 'hang' || answer.delayMs || answer.trickle) parkOnClock(response);
      if (answer === 'hang') return;
      if (answer.delayMs) {
        void sleep(answer.delayMs).then(() => respond(delivery, answer, response));
        return;
      }
      respond(delivery, answer, response);
    });
  });
  const respond = (delivery: Delivery, answer: Exclude<Answer, 'hang'>, response: ServerResponse) => {
    delivery.answered = answer.status;
    delivery.answeredAt = nowMillis();
    response.writeHead(answer.status, answer.headers ?? {});
    if (answer.trickle) {
      // The status and a first byte at once, the next ones on the service's clock: paced by a real timer, the
      // status waited for its first tick, and a manual clock stepping faster than that cut the attempt before it
      // had any answer (a timeout, not the endless 200 it is).
      response.write('.');
      const stopped = new AbortController();
      every(100, stopped.signal, () => response.destroyed || response.write('.'));
      response.on('close', () => stopped.abort());
      return;
    }
    if (answer.bodyBytes) response.write(Buffer.alloc(answer.bodyBytes, 'x'));
    response.end();
  };
  server.on('connection', (socket) => numbers.set(socket, ++connections));
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    get secret() {
      return secret;
    },
    deliveries,
    get connections() {
      return connections;
    },
    byId: () => {
      const map = new Map<string, Delivery[]>();
      for (const d of deliveries) map.set(d.webhookId, [...(map.get(d.webhookId) ?? []), d]);
      return map;
    },
    answer: (next) => {
      choose = next;
    },
    useSecret: (next) => {
      secret = next;
      hook = new Webhook(next);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A stored endpoint of the account (through the data layer, as the management API stores one). */
export async function createTestEndpoint(
  accountId: string,
  input: { url: string; secret: string; events: string[] },
): Promise<Endpoint> {
  const now = nowMillis();
  const endpoint: Endpoint = {
    accountId,
    id: newEndpointId(now),
    url: input.url,
    events: input.events,
    description: null,
    enabled: true,
    disabledReason: null,
    secrets: [{ secret: input.secret, expiresAt: null }],
    createdAt: formatTimestamp(now * 1000),
    updatedAt: formatTimestamp(now * 1000),
    lastSuccessAt: null,
    failingSince: null,
  };
  await createEndpoint(endpoint);
  return endpoint;
}

/**
 * Takes an endpoint out of the due index (its gsi2 keys): an endpoint a test made and no runner delivers to would
 * stay among the earliest entries of the file's table's due index, and a later test's runner would take it.
 */
export async function removeFromDueIndex(accountId: string, endpointId: string): Promise<void> {
  await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: webhookKeys.endpoint(accountId, endpointId),
      UpdateExpression: 'REMOVE gsi2pk, gsi2sk',
    }),
  );
}

/**
 * A fresh account with one endpoint (wanting ticket.created) to a new receiver of ours, and one ticket created
 * through the gateway: its event is the one the test delivers. The receiver is pushed to `receivers` (closed by
 * the test file).
 */
export async function accountWithTicketEvent(gateway: Gateway, receivers: Receiver[]) {
  const account = await createTestAccount();
  const hook = await startReceiver();
  receivers.push(hook);
  const endpoint = await createTestEndpoint(account.accountId, {
    url: hook.url,
    secret: hook.secret,
    events: ['ticket.created'],
  });
  const created = await gateway.call('POST', '/api/tickets', {
    key: account.apiKey,
    body: { subject: 'Printer on fire', description: 'Smoke.', requester_email: 'ann@client.test' },
  });
  expect(created.status).toBe(201);
  const feed = await gateway.call('GET', '/api/events', { key: account.apiKey });
  const [event] = feed.body.data as { id: string; type: string }[];
  if (!event) throw new Error('no event');
  return { account, hook, endpoint, event };
}

/**
 * `npm start`'s dispatcher in this test process, on the file's table (test/support/file-table.ts, which this
 * declares with the stream the dispatcher reads): started before the file's tests, stopped after.
 */
export function useDispatcher(options: Partial<DispatcherOptions> = {}): () => Dispatcher {
  useTable({ stream: true });
  let dispatcher: Dispatcher | undefined;
  beforeAll(async () => {
    dispatcher = await startWebhookDispatcher({
      endpoint: process.env.DYNAMODB_ENDPOINT ?? '',
      tableName: process.env.TABLE_NAME ?? '',
      consumer: `test-${randomBytes(4).toString('hex')}`,
      log: () => {},
      ...options,
    });
  });
  afterAll(async () => {
    await dispatcher?.stop(100);
  });
  return () => {
    if (!dispatcher) throw new Error('useDispatcher(): the dispatcher runs in tests and hooks only');
    return dispatcher;
  };
}

/**
 * `count` ticket.created events of the account written straight to its feed (places 1…count, as the benchmark's
 * bulk loader writes them: no ticket behind them), then handed to the webhooks-stream function in batches of 100, as
 * the event source mapping hands them over. Answers the events' ids. A load of thousands of events in seconds, where
 * as many creates through the API take minutes on a shared machine.
 */
export async function fanOutEvents(accountId: string, count: number): Promise<string[]> {
  const at = nowMicros();
  const events = Array.from({ length: count }, (_, i) =>
    eventItems(
      accountId,
      i + 1,
      { type: 'ticket.created', object: { uuid: randomUUID(), subject: `Load ${i}` }, version: 1 },
      at + i,
    ),
  );
  const heads = events.map((e) => e.items[0] as Record<string, unknown>);
  await batchPutAll(events.flatMap((e) => e.items));
  for (let from = 0; from < heads.length; from += 100) {
    const records = heads.slice(from, from + 100).map((item, i) => inserted(item, String(from + i + 1)));
    expect(await streamHandler(streamBatch(...records), lambdaContext)).toEqual({ batchItemFailures: [] });
  }
  return events.map((e) => e.id);
}
