import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { handler as createWebhook } from '#functions/webhooks-create.ts';
import { localClient } from '#infra/local/dynamodb-local.ts';
import { type Dispatcher, startDuePool, startWebhookDispatcher } from '#infra/local/webhooks.ts';
import { eventKeys, webhookDeliveryKeys, webhookKeys } from '#lib/data/keys.ts';
import { dynamo } from '#lib/data/store/client.ts';
import type { DueRunner } from '#lib/webhooks/due.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import { countItems } from '../lib/count-items.ts';
import { origin, StoreCalls } from '../lib/store-calls.ts';
import { type Receivers, startReceivers } from '../lib/webhook-receiver.ts';

/**
 * What the webhook bench's latency, throughput and cost measurements share: the dispatcher as `npm start` runs it
 * (stopped and started again by the throughput runs), the receivers, the changes made through the in-process
 * handlers, the tally of the dispatcher's store calls, and the bench's own reads of the store (through a client of
 * their own: never counted).
 */

export interface Registered {
  path: number;
  id: string;
}

export type Account = { accountId: string };

const TICKET = {
  subject: 'Invoice missing for March',
  description: 'Bench ticket',
  requester_email: 'someone@client.test',
};

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function waitUntil(done: () => boolean, timeoutMs: number, what: string) {
  const until = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export class WebhookRig {
  readonly calls = new StoreCalls(dynamo);
  /** Lines the dispatcher logged (errors it went on after). */
  readonly dispatcherLog: string[] = [];
  dispatcher: Dispatcher | undefined;
  private paths = 0;
  private patches = 0;

  private constructor(
    readonly endpoint: string,
    readonly tableName: string,
    readonly receivers: Receivers,
    readonly own: DynamoDBDocumentClient,
  ) {}

  static async start(endpoint: string, tableName: string): Promise<WebhookRig> {
    const own = DynamoDBDocumentClient.from(localClient(endpoint));
    return new WebhookRig(endpoint, tableName, await startReceivers(), own);
  }

  /** `npm start`'s dispatcher; `runners: 0`: its stream reader alone (the fan-out), the due runners started apart. */
  startDispatcher(options: { runners?: number } = {}): Promise<Dispatcher> {
    return origin.run('dispatcher', () =>
      startWebhookDispatcher({
        endpoint: this.endpoint,
        tableName: this.tableName,
        consumer: 'bench',
        log: (line) => this.dispatcherLog.push(line),
        ...options,
      }),
    );
  }

  /** `npm start`'s pool of due runners, apart from its stream reader (counted as the dispatcher's calls). */
  startPool(): DueRunner[] {
    return origin.run('dispatcher', () =>
      startDuePool({ onError: (error) => this.dispatcherLog.push(String(error)) }),
    ).runners;
  }

  async close() {
    await this.dispatcher?.stop();
    await this.receivers.close();
    this.own.destroy();
  }

  /** Registers an endpoint through POST /api/webhooks, subscribed to `*`, on a path of its own. */
  async register(acc: Account): Promise<Registered> {
    const n = this.paths++;
    const answer = await createWebhook(
      proxyEvent({
        method: 'POST',
        path: '/api/webhooks',
        caller: callerOf(acc),
        body: { url: this.receivers.url(n), events: ['*'], description: `bench ${n}` },
      }),
      lambdaContext,
    );
    if (answer.statusCode !== 201) throw new Error(`POST /api/webhooks: ${answer.statusCode} ${answer.body}`);
    const data = JSON.parse(answer.body).data as { id: string; secret: string };
    this.receivers.useSecret(n, data.secret);
    return { path: n, id: data.id };
  }

  async create(acc: Account): Promise<string> {
    const answer = await createTicket(
      proxyEvent({ method: 'POST', path: '/api/tickets', caller: callerOf(acc), body: TICKET }),
      lambdaContext,
    );
    if (answer.statusCode !== 201) throw new Error(`create: ${answer.statusCode} ${answer.body}`);
    return String(JSON.parse(answer.body).ticket.uuid);
  }

  /** A PATCH of the ticket's description: answers the version its ETag gives (the event's data.version). */
  async update(acc: Account, uuid: string): Promise<number> {
    const n = this.patches++;
    const answer = await updateTicket(
      ticketEvent('PATCH', uuid, callerOf(acc), { description: `Bench update ${n}` }),
      lambdaContext,
    );
    if (answer.statusCode !== 200) throw new Error(`update: ${answer.statusCode} ${answer.body}`);
    return Number(/\d+/.exec(String(answer.headers?.ETag))?.[0]);
  }

  /** Deliveries that arrived more than once (same webhook-id) at these endpoints' receivers. */
  duplicatesAt(endpoints: Registered[]) {
    return endpoints.reduce(
      (n, e) => n + [...this.receivers.arrivals(e.path).values()].reduce((m, a) => m + a.count - 1, 0),
      0,
    );
  }

  /** The event items of the account's feed (void places aside). */
  async countEvents(accountId: string): Promise<number> {
    const counts = await Promise.all(
      eventKeys.partitions(accountId).map((pk) =>
        countItems(this.own, {
          tableName: this.tableName,
          pk,
          attribute: 'type',
          value: eventKeys.itemType.event,
        }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** The endpoints' recorded attempts (the sums of their logs' counts) and their latest success (epoch ms). */
  async endpointMarks(
    accountId: string,
    endpoints: { id: string }[],
  ): Promise<{ attempts: number; lastSuccessAt: number }> {
    const { Responses } = await this.own.send(
      new BatchGetCommand({
        RequestItems: {
          [this.tableName]: {
            Keys: endpoints.map((e) => webhookKeys.endpoint(accountId, e.id)),
            ProjectionExpression: 'lastSuccessAt',
            ConsistentRead: true,
          },
        },
      }),
    );
    const items = Responses?.[this.tableName] ?? [];
    const counts = await Promise.all(
      endpoints.map(async (e) => {
        const { Items = [] } = await this.own.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': webhookDeliveryKeys.attemptCountsPartition(accountId, e.id) },
            ConsistentRead: true,
          }),
        );
        return Items.reduce((n, i) => n + Number(i.n ?? 0), 0);
      }),
    );
    return {
      attempts: counts.reduce((a, b) => a + b, 0),
      lastSuccessAt: Math.max(0, ...items.map((i) => Number(i.lastSuccessAt ?? 0))),
    };
  }

  countDeliveries(accountId: string, endpointId: string, state: string): Promise<number> {
    return countItems(this.own, {
      tableName: this.tableName,
      pk: webhookDeliveryKeys.delivery(accountId, endpointId, '').pk,
      attribute: 'state',
      value: state,
    });
  }

  /** An endpoint's deliveries not succeeded, with the store's account of them (a bench that stopped says why). */
  async unfinished(accountId: string, endpointId: string): Promise<string[]> {
    const { Items = [] } = await this.own.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: '#state <> :succeeded',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: {
          ':pk': webhookDeliveryKeys.delivery(accountId, endpointId, '').pk,
          ':succeeded': 'succeeded',
        },
        ConsistentRead: true,
      }),
    );
    const { Item: endpoint } = await this.own.send(
      new GetCommand({
        TableName: this.tableName,
        Key: webhookKeys.endpoint(accountId, endpointId),
        ConsistentRead: true,
      }),
    );
    const { gsi2sk, leaseOwner, leaseUntil, slowUntil, enabled } = endpoint ?? {};
    return [
      `  endpoint ${endpointId}: ${JSON.stringify({ enabled, gsi2sk, leaseOwner, leaseUntil, slowUntil, now: Date.now() })}`,
      ...Items.map(
        (d) =>
          `    ${d.eventId} ${d.eventType}: ${JSON.stringify({ state: d.state, attempts: d.attempts, nextAt: d.nextAt, lastStatus: d.lastStatus, lastError: d.lastError, leaseOwner: d.leaseOwner, leaseUntil: d.leaseUntil })}`,
      ),
    ];
  }
}
