import { readFileSync } from 'node:fs';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as dueHandler } from '#functions/webhooks-due.ts';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { webhookDeliveryKeys } from '#lib/data/keys.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { getDelivery } from '#lib/data/webhook-deliveries.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { lambdaContext } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { inserted, storedEventItem, streamBatch } from '#test/support/stream-records.ts';
import { type Receiver, startReceiver } from '#test/support/webhooks.ts';

/**
 * Issue 27, "no key shared by every account": every partition key the data layer writes (base table, gsi1, gsi2)
 * holds the account's id or an object's own id (or a hash or uuid it was derived from). A key that holds neither
 * is one partition for the whole service: 1,000 write units/s for every account together, and its throttling
 * pushes back on every account's writes. This records every key written while a broad scenario runs, and names
 * each shape that holds neither.
 */
process.env[STAGE_VARIABLE] = LOCAL_STAGE;
const gateway = useGateway();
const receivers: Receiver[] = [];
afterAll(async () => {
  delete process.env[STAGE_VARIABLE];
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

type Input = Record<string, unknown>;
interface Written {
  /** `pk`, `gsi1pk` or `gsi2pk`. */
  attribute: string;
  value: string;
  /** The key of the item it was written on. */
  item: { pk: string; sk: string };
}

const written: Written[] = [];
const RECORDER = 'partitionKeyRecorder';

/** The index partition key (`gsi1pk`, `gsi2pk`) an UpdateExpression sets, if any. */
function indexPkSet(update: Input, attribute: string): string | undefined {
  const match = new RegExp(`${attribute}\\s*=\\s*(:\\w+)`).exec(String(update.UpdateExpression ?? ''));
  const values = (update.ExpressionAttributeValues ?? {}) as Input;
  return match?.[1] && typeof values[match[1]] === 'string' ? String(values[match[1]]) : undefined;
}

/** The partition keys one write (a Put, an Update, a Delete, alone or in a transaction or batch) writes. */
function record(kind: string, input: Input): void {
  const item = (kind === 'Put' ? input.Item : input.Key) as Input | undefined;
  if (!item) return;
  const key = { pk: String(item.pk), sk: String(item.sk) };
  written.push({ attribute: 'pk', value: key.pk, item: key });
  for (const attribute of ['gsi1pk', 'gsi2pk']) {
    const value =
      kind === 'Put' ? item[attribute] : kind === 'Update' ? indexPkSet(input, attribute) : undefined;
    if (typeof value === 'string') written.push({ attribute, value, item: key });
  }
}

beforeAll(() => {
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Input;
      const operation = String(context.commandName).replace(/Command$/, '');
      if (operation === 'PutItem' || operation === 'Put') record('Put', input);
      else if (operation === 'UpdateItem' || operation === 'Update') record('Update', input);
      else if (operation === 'DeleteItem' || operation === 'Delete') record('Delete', input);
      else if (operation === 'TransactWriteItems') {
        for (const entry of input.TransactItems as Input[])
          for (const [kind, write] of Object.entries(entry))
            if (kind !== 'ConditionCheck') record(kind, write as Input);
      } else if (operation === 'BatchWriteItem') {
        for (const requests of Object.values(input.RequestItems as Record<string, Input[]>))
          for (const request of requests) {
            if (request.PutRequest) record('Put', { Item: (request.PutRequest as Input).Item });
            if (request.DeleteRequest) record('Delete', { Key: (request.DeleteRequest as Input).Key });
          }
      }
      return next(args);
    },
    { step: 'initialize', name: RECORDER },
  );
});
afterAll(() => {
  dynamo.middlewareStack.remove(RECORDER);
});

/** Ids an object owns: uuids, hex digests, and the prefixed ids (`we_…`, `evt_…`, `key_…`). */
const OWN_ID =
  /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|\b(?:we|evt|key)_\w+/gi;

/** A key with the ids it holds named by what they are: `TICKETS#<acc>`, `API_KEY#<id>`. */
function shapeOf(value: string, accounts: Map<string, string>): string {
  let shape = value;
  for (const [id, slug] of accounts) shape = shape.split(id).join('<acc>').split(slug).join('<slug>');
  return shape.replace(OWN_ID, '<id>');
}

/**
 * An inbound address's own lookup item (`EMAIL_ADDRESS#<address>`, docs/email.md): keyed by the address, which
 * one account alone holds (applying an address another account holds is refused), so it is that address's
 * partition, not one every account shares.
 */
const addressItem = (entry: Written) =>
  entry.attribute === 'pk' &&
  /^EMAIL_ADDRESS#[^#@\s]+@[^#\s]+$/.test(entry.value) &&
  entry.item.sk === 'EMAIL_ADDRESS';

/** Whether the due index's partition key depends on the endpoint's ids at all (a constant is the same for all). */
const dueKeyVaries =
  new Set(Array.from({ length: 64 }, (_, i) => webhookDeliveryKeys.due(`acc${i}`, `we_${i}`, 0).gsi2pk))
    .size > 1;

/**
 * Keys derived from an item's own ids that hold neither: the due index's partition, chosen by a hash of the
 * endpoint's account and id (lib/data/webhooks/due-shards.ts). It passes only as the very key of the item it is written
 * on, and only when that key depends on the ids at all.
 */
function derivedFromItsItem(entry: Written): boolean {
  if (!dueKeyVaries) return false;
  const endpoint = /^WEBHOOKS#(.+)$/.exec(entry.item.pk);
  const id = /^ENDPOINT#(.+)$/.exec(entry.item.sk);
  return (
    entry.attribute === 'gsi2pk' &&
    !!endpoint?.[1] &&
    !!id?.[1] &&
    entry.value === webhookDeliveryKeys.due(endpoint[1], id[1], 0).gsi2pk
  );
}

const demo = JSON.parse(readFileSync('examples/demo-account.json', 'utf8')) as Input;
const { slug: _slug, name: _name, ...demoFile } = demo;

describe('partition keys', () => {
  it('every partition key written (base table, gsi1 and gsi2) holds an account or an object id: none is shared by every account', async () => {
    const accounts = new Map<string, string>();
    // Each its own support address: an address belongs to one account (docs/email.md).
    const withAddress = (name: string) => ({
      ...demoFile,
      email: {
        ...(demoFile.email as Input),
        addresses: [`support@${name}-${process.pid}-${Date.now()}.test`],
      },
    });
    const account = await createTestAccount(withAddress('one'));
    const other = await createTestAccount(withAddress('two'));
    for (const a of [account, other]) accounts.set(a.accountId, a.slug);
    const key = account.apiKey;
    const hook = await startReceiver();
    receivers.push(hook);

    const registered = await gateway.call('POST', '/api/webhooks', {
      key,
      body: { url: hook.url, events: ['ticket.*', 'deal.*', 'contact.*'] },
    });
    expect(registered.status).toBe(201);
    const endpointId = String(registered.body.data.id);

    const ticket = { subject: 'Invoice missing', description: 'March.', requester_email: 'kim@client.test' };
    const created = await gateway.call('POST', '/api/tickets', { key, body: ticket });
    expect(created.status).toBe(201);
    const again = { key, body: ticket, headers: { 'Idempotency-Key': 'order-4711' } };
    expect((await gateway.call('POST', '/api/tickets', again)).status).toBe(201);
    expect((await gateway.call('POST', '/api/tickets', again)).headers.get('idempotent-replayed')).toBe(
      'true',
    );
    const patched = await gateway.call('PATCH', `/api/tickets/${created.body.ticket.uuid}`, {
      key,
      body: { status: 'resolved', priority: 'urgent' },
      headers: { 'Idempotency-Key': 'resolve-1' },
    });
    expect(patched.status).toBe(200);

    const deal = await gateway.call('POST', '/api/deals', {
      key,
      body: {
        name: 'Annual plan',
        amount: 4800,
        currency: 'eur',
        contact_email: 'new@client.test',
        contact_first_name: 'Nora',
      },
      headers: { 'Idempotency-Key': 'deal-1' },
    });
    expect(deal.status, deal.text).toBe(201);
    const moved = await gateway.call('PATCH', `/api/deals/${deal.body.data.uuid}`, {
      key,
      body: { stage_id: 2, amount: 5200.5 },
    });
    expect(moved.status, moved.text).toBe(200);
    const contacts = await gateway.call('GET', '/api/contacts?search=kim', { key });
    const contact = contacts.body.data[0];
    expect(
      (
        await gateway.call('PATCH', `/api/contacts/${contact.uuid}`, {
          key,
          body: { first_name: 'Kimberly' },
        })
      ).status,
    ).toBe(200);

    const feed = await gateway.call('GET', '/api/events?limit=100', { key });
    expect(feed.status).toBe(200);
    const events = feed.body.data as { id: string }[];
    expect(events.length).toBeGreaterThan(5);
    // The deployed dispatcher: the stream function fans the first event out, the due function delivers it.
    const [first] = events;
    if (!first) throw new Error('no event');
    const item = await storedEventItem(account.accountId, first.id);
    expect(await streamHandler(streamBatch(inserted(item, '1')), lambdaContext)).toEqual({
      batchItemFailures: [],
    });
    const context = {
      ...lambdaContext,
      getRemainingTimeInMillis: () => attemptTimeoutMs() + 6500,
    } as Context;
    await dueHandler({}, context);
    expect(hook.deliveries.map((d) => d.webhookId)).toEqual([first.id]);
    expect(await getDelivery(account.accountId, endpointId, first.id)).toMatchObject({ state: 'succeeded' });
    await createKey(account.accountId, { name: 'second', scopes: ['tickets:read'] });

    const shapes = new Map<string, number>();
    for (const entry of written) {
      const shape = `${entry.attribute} ${shapeOf(entry.value, accounts)}`;
      const owned = /<acc>|<slug>|<id>/.test(shape) || derivedFromItsItem(entry) || addressItem(entry);
      if (!owned) shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
    }
    // Enough writes of every kind were seen for the check to mean something.
    const seen = new Set(
      written.map((entry) => `${entry.attribute} ${shapeOf(entry.value, accounts).split('#')[0]}`),
    );
    for (const kind of [
      'pk TICKETS',
      'pk DEALS',
      'pk EVENTS',
      'pk IDEMPOTENCY',
      'pk WEBHOOK_ATTEMPTS',
      'gsi1pk API_KEY_ID',
    ])
      expect(seen).toContain(kind);
    expect(
      written.some((entry) => entry.attribute === 'gsi2pk' && entry.item.sk.startsWith('ENDPOINT#')),
    ).toBe(true);
    expect([...shapes].map(([shape, n]) => `${shape} (${n} writes)`)).toEqual([]);
  });
});
