import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as dueHandler } from '#functions/webhooks-due.ts';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { startMailServer } from '#infra/local/mail.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import {
  erasureKeys,
  handBackKeys,
  organizationKeys,
  outboxKeys,
  queueKeys,
  ruleSweepKeys,
  ticketKeys,
  trashKeys,
  webhookDeliveryKeys,
} from '#lib/data/keys.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { getDelivery } from '#lib/data/webhook-deliveries.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import { nowMillis } from '#lib/time.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { atTime } from '#test/support/clock.ts';
import { lambdaContext } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { inserted, storedEventItem, streamBatch } from '#test/support/stream-records.ts';
import { type Receiver, startReceiver } from '#test/support/webhooks.ts';

/**
 * Issue 27, "no key shared by every account": every partition key the data layer writes (base table, gsi1, gsi2)
 * holds the account's id or an object's own id (or a hash or uuid it was derived from). A key that holds neither
 * is one partition for the whole service: 1,000 write units/s for every account together, and its throttling
 * pushes back on every account's writes. This records every key written while a scenario writes every kind of
 * item the service writes (issue 40: clocks and a breach, messages and mail out and in, a deletion and a restore, an
 * erasure and its ledger, deliveries, keys), and names each shape that holds neither and is not the derived shard
 * of its own item (derivedKeys below).
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

/**
 * Keys derived from an item's own ids that hold neither: the due families' partitions (`TICKET_DUE#<n>`,
 * `EMAIL_DUE#<n>`, `PURGE_DUE#<n>`, `ERASURE_DUE#<n>`, `WEBHOOK_DUE#<n>`, `ORGANIZATION_CLEARING_DUE#<n>`) and the erasure ledger's listing
 * (`ERASURE_LEDGERS#<n>`), each one of DUE_SHARDS (16) partitions chosen by a hash of the item's account and own id
 * (lib/data/webhooks/due-shards.ts). Such a key is not one an account can heat: an account's entries spread over all
 * 16 by their ids, so its share of any one is 1/16 of its own entries, and no write of one account lands on a
 * partition it alone fills (docs/capacity.md, "Derived shards"). An entry passes only when it is exactly the key its
 * item's account and ids give (the builder's own answer, not a prefix), and only for a builder whose key depends on
 * the ids at all (a constant would be the same for every account).
 */
type ItemKey = { pk: string; sk: string };
const derivedKeys: Record<string, (accountId: string, item: ItemKey) => string | undefined> = {
  TICKET_DUE: (acc, item) => ticketKeys.due(acc, item.sk, 0).gsi2pk,
  EMAIL_DUE: (acc, item) => outboxKeys.due(acc, item, 0).gsi2pk,
  PURGE_DUE: (acc, item) => trashKeys.purgeDue(acc, item.sk, 0).gsi2pk,
  ERASURE_DUE: (acc, item) => erasureKeys.due(acc, item.sk, 0).gsi2pk,
  WEBHOOK_DUE: (acc, item) =>
    item.sk.startsWith('ENDPOINT#') ? webhookDeliveryKeys.due(acc, item.sk.slice(9), 0).gsi2pk : undefined,
  ERASURE_LEDGERS: (acc, item) => erasureKeys.ledger(acc, item.sk).gsi2pk,
  // A clearing's sort key is `CLEARING#<id>`: the id is its digits.
  ORGANIZATION_CLEARING_DUE: (acc, item) =>
    organizationKeys.clearingDue(acc, Number(item.sk.replace(/^\D+/, '')), 0).gsi2pk,
  // A freed entry's sort key is the agent's padded id; a hand-back's `HANDBACK#<id>`.
  QUEUE_FREED_DUE: (acc, item) => queueKeys.freedDue(acc, Number(item.sk.replace(/\D+/g, '')), 0).gsi2pk,
  HANDBACK_DUE: (acc, item) => handBackKeys.due(acc, item.sk.replace(/^HANDBACK#/, ''), 0).gsi2pk,
  // One sweep an account: its shard is the account's.
  RULE_SWEEP_DUE: (acc) => ruleSweepKeys.due(acc, 0).gsi2pk,
};

/** Whether a family's key depends on the ids at all: 64 items of 64 accounts give more than one key. */
const varies = (derive: (accountId: string, item: ItemKey) => string | undefined) =>
  new Set(
    Array.from({ length: 64 }, (_, i) =>
      derive(`acc${i}`, { pk: `X#acc${i}#${i}`, sk: `ENDPOINT#${String(i).padStart(28, '0')}` }),
    ),
  ).size > 1;

function derivedFromItsItem(entry: Written, accounts: Map<string, string>): boolean {
  const family = entry.value.split('#')[0] as string;
  const derive = derivedKeys[family];
  const accountId = [...accounts.keys()].find((id) => entry.item.pk.includes(id));
  if (!derive || !accountId || entry.attribute !== 'gsi2pk' || !varies(derive)) return false;
  return entry.value === derive(accountId, entry.item);
}

const demo = JSON.parse(readFileSync('examples/demo-account.json', 'utf8')) as Input;
const { slug: _slug, name: _name, ...demoFile } = demo;

type Call = typeof gateway.call;
const MIN_MS = 60_000;

/** A ticket whose first-reply clock ran out (created ten minutes ago), breached by the breach runner's pass. */
async function breachedTicket(call: Call, key: string): Promise<string> {
  const body = { subject: 'Printer down', description: 'Again.', requester_email: 'lee@client.test' };
  const late = await atTime(nowMillis() - 10 * MIN_MS, () => call('POST', '/api/tickets', { key, body }));
  expect(late.status, late.text).toBe(201);
  expect(late.body.ticket.sla.first_reply).not.toBeNull();
  expect((await breachPass({ limit: 1000 })).breached).toBeGreaterThan(0);
  return String(late.body.ticket.uuid);
}

/** Tickets (an idempotent create, an update), a message, and an agent's reply to an e-mail requester: its mail is queued. */
async function ticketsAndMessages(call: Call, key: string) {
  const ticket = { subject: 'Invoice missing', description: 'March.', requester_email: 'kim@client.test' };
  const created = await call('POST', '/api/tickets', { key, body: ticket });
  expect(created.status).toBe(201);
  const again = { key, body: ticket, headers: { 'Idempotency-Key': 'order-4711' } };
  expect((await call('POST', '/api/tickets', again)).status).toBe(201);
  expect((await call('POST', '/api/tickets', again)).headers.get('idempotent-replayed')).toBe('true');
  const uuid = String(created.body.ticket.uuid);
  const note = { body: 'Any news?', author: 'requester' };
  expect((await call('POST', `/api/tickets/${uuid}/messages`, { key, body: note })).status).toBe(201);
  const reply = { body: 'Sent again today.', author: 'agent', agent_id: 1 };
  const replied = await call('POST', `/api/tickets/${uuid}/messages`, { key, body: reply });
  expect(replied.status, replied.text).toBe(201);
  expect(replied.body.data.email.delivery).toMatchObject({ status: 'queued' });
  const patched = await call('PATCH', `/api/tickets/${uuid}`, {
    key,
    body: { status: 'resolved', priority: 'urgent' },
    headers: { 'Idempotency-Key': 'resolve-1' },
  });
  expect(patched.status).toBe(200);
}

/** A deal with a new contact, moved; a contact renamed. */
async function dealsAndContacts(call: Call, key: string) {
  const deal = await call('POST', '/api/deals', {
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
  const moved = await call('PATCH', `/api/deals/${deal.body.data.uuid}`, {
    key,
    body: { stage_id: 2, amount: 5200.5 },
  });
  expect(moved.status, moved.text).toBe(200);
  const contact = (await call('GET', '/api/contacts?search=kim', { key })).body.data[0];
  const renamed = await call('PATCH', `/api/contacts/${contact.uuid}`, {
    key,
    body: { first_name: 'Kimberly' },
  });
  expect(renamed.status).toBe(200);
}

/** Inbound mail through npm start's SMTP server: a new ticket, its log entry, the acknowledgement queued. */
async function inboundMail(address: string) {
  const dir = await mkdtemp(join(tmpdir(), 'deskpipe-keys-mail-'));
  const server = await startMailServer({ port: 0, dir });
  try {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.port,
      secure: false,
      ignoreTLS: true,
    });
    await transport.sendMail({ from: 'rita@customer.test', to: address, subject: 'Hello', text: 'Help.' });
    await server.idle();
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A ticket deleted (trash, its purge due) and restored; an erasure run to completion (its due entry, the ledger). */
async function deletionsAndErasure(call: Call, key: string, accountId: string, uuid: string) {
  expect((await call('DELETE', `/api/tickets/${uuid}`, { key })).status).toBe(200);
  expect((await call('POST', `/api/trash/${uuid}/restore`, { key, body: {} })).status).toBe(200);
  const started = await call('POST', '/api/erasures', { key, body: { email: 'kim@client.test' } });
  expect(started.status, started.text).toBe(202);
  const id = String(started.body.data.id);
  await runErasure(accountId, id);
  expect((await call('GET', `/api/erasures/${id}`, { key })).body.data.status).toBe('completed');
}

/** API keys made, rotated and revoked through the API, and one made by the admin path. */
async function apiKeys(call: Call, key: string, accountId: string) {
  const made = await call('POST', '/api/keys', { key, body: { name: 'ci', scopes: ['tickets:read'] } });
  expect(made.status, made.text).toBe(201);
  const rotated = await call('POST', `/api/keys/${made.body.data.id}/rotate`, {
    key,
    body: { expire_old_in_seconds: 0 },
  });
  expect(rotated.status, rotated.text).toBe(201);
  expect((await call('DELETE', `/api/keys/${rotated.body.data.id}`, { key })).status).toBe(200);
  await createKey(accountId, { name: 'second', scopes: ['tickets:read'] });
}

/** An agent made (its queue's freed entry), given a ticket and retired (a hand-back owed). */
async function people(call: Call, key: string) {
  const made = await call('POST', '/api/agents', { key, body: { email: 'keys@desk.test', name: 'Keys' } });
  expect(made.status, made.text).toBe(201);
  const ticket = await call('POST', '/api/tickets', {
    key,
    body: { subject: 'Held', description: 'd', requester_email: 'held@example.com' },
  });
  expect(ticket.status, ticket.text).toBe(201);
  const path = `/api/tickets/${ticket.body.ticket.uuid}`;
  expect((await call('PATCH', path, { key, body: { assignee_id: made.body.data.id } })).status).toBe(200);
  const retired = await call('PATCH', `/api/agents/${made.body.data.id}`, { key, body: { active: false } });
  expect(retired.status, retired.text).toBe(200);
}

/** An organization made, changed (a domain swapped, renamed) and deleted: its item and its claims. */
async function organizations(call: Call, key: string) {
  const made = await call('POST', '/api/organizations', {
    key,
    body: { name: 'Acme', domains: ['acme.example', 'acme.test'] },
  });
  expect(made.status, made.text).toBe(201);
  const path = `/api/organizations/${made.body.data.id}`;
  const patch = { name: 'Acme Corp', domains: ['acme.example', 'acme.dev'] };
  expect((await call('PATCH', path, { key, body: patch })).status).toBe(200);
  expect((await call('DELETE', path, { key })).status).toBe(200);
}

/** A time rule: its write sweeps the account's tickets (lib/data/rules/sweeps.ts). */
async function timeRule(call: Call, key: string) {
  const body = {
    name: 'Nudge',
    on: 'time',
    time: { after_minutes: 60, since: 'created_at' },
    actions: [{ type: 'add_tags', tags: ['nudged'] }],
  };
  const made = await call('POST', '/api/rules', { key, body });
  expect(made.status, made.text).toBe(201);
}

/** The deployed dispatcher: the stream function fans the first event out, the due function delivers it. */
async function webhookDelivery(account: TestAccount, hook: Receiver, endpointId: string) {
  const feed = await gateway.call('GET', '/api/events?limit=100', { key: account.apiKey });
  expect(feed.status).toBe(200);
  const events = feed.body.data as { id: string; type: string }[];
  expect(events.length).toBeGreaterThan(5);
  // The first the endpoint subscribes to (the account's apply wrote agent and team events before it).
  const first = events.find((e) => /^(ticket|deal|contact)\./.test(e.type));
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
}

/** Every kind of item the service writes, each seen written at least once: the check then means something. */
const KINDS = [
  'pk TICKETS',
  'gsi2pk TICKET_DUE',
  'pk TICKET_MESSAGES',
  'gsi2pk EMAIL_DUE',
  'pk EMAIL_INBOUND',
  'pk EMAIL_ACK',
  'pk TRASH',
  'gsi2pk PURGE_DUE',
  'pk ERASURES',
  'gsi2pk ERASURE_DUE',
  'pk ERASURE_LEDGER',
  'gsi2pk ERASURE_LEDGERS',
  'pk DEALS',
  'pk CONTACTS',
  'pk EVENTS',
  'pk IDEMPOTENCY',
  'pk WEBHOOK_DELIVERY',
  'pk WEBHOOK_ATTEMPTS',
  'gsi2pk WEBHOOK_DUE',
  'pk API_KEYS',
  'gsi1pk API_KEY_ID',
  'pk ORGANIZATIONS',
  'gsi2pk ORGANIZATION_CLEARING_DUE',
  'pk QUEUE_FREED',
  'gsi2pk QUEUE_FREED_DUE',
  'pk HANDBACKS',
  'gsi2pk HANDBACK_DUE',
  'pk RULE_SWEEP',
  'gsi2pk RULE_SWEEP_DUE',
];

describe('partition keys', () => {
  it("every partition key written (base table, gsi1 and gsi2) holds an account or an object id, or is the shard its item's ids give: none is shared by every account", async () => {
    const accounts = new Map<string, string>();
    // Each its own support address (an address belongs to one account: docs/email.md), acknowledging mail in; a
    // first-reply clock of a minute, any hour, so a ticket breaches.
    const addressOf = (name: string) => `support@${name}-${process.pid}-${Date.now()}.test`;
    const withAddress = (address: string) => ({
      ...demoFile,
      email: { addresses: [address], acknowledge: true },
      sla_policies: [{ name: 'Fast', first_reply_minutes: 1, resolution_minutes: 60 }],
    });
    const address = addressOf('one');
    const account = await createTestAccount(withAddress(address));
    const other = await createTestAccount(withAddress(addressOf('two')));
    for (const a of [account, other]) accounts.set(a.accountId, a.slug);
    const key = account.apiKey;
    const hook = await startReceiver();
    receivers.push(hook);

    const registered = await gateway.call('POST', '/api/webhooks', {
      key,
      body: { url: hook.url, events: ['ticket.*', 'deal.*', 'contact.*'] },
    });
    expect(registered.status).toBe(201);
    await ticketsAndMessages(gateway.call, key);
    const late = await breachedTicket(gateway.call, key);
    await dealsAndContacts(gateway.call, key);
    await inboundMail(address);
    await deletionsAndErasure(gateway.call, key, account.accountId, late);
    await apiKeys(gateway.call, key, account.accountId);
    await organizations(gateway.call, key);
    await timeRule(gateway.call, key);
    await people(gateway.call, key);
    await webhookDelivery(account, hook, String(registered.body.data.id));

    const shapes = new Map<string, number>();
    for (const entry of written) {
      const shape = `${entry.attribute} ${shapeOf(entry.value, accounts)}`;
      const owned =
        /<acc>|<slug>|<id>/.test(shape) || derivedFromItsItem(entry, accounts) || addressItem(entry);
      if (!owned) shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
    }
    const seen = new Set(
      written.map((entry) => `${entry.attribute} ${shapeOf(entry.value, accounts).split('#')[0]}`),
    );
    expect(KINDS.filter((kind) => !seen.has(kind))).toEqual([]);
    expect([...shapes].map(([shape, n]) => `${shape} (${n} writes)`)).toEqual([]);
    // A derived key passes only as the very shard its item's ids give: each family's entry moved one shard is not.
    for (const family of Object.keys(derivedKeys)) {
      const entry = written.find((e) => e.attribute === 'gsi2pk' && e.value.startsWith(`${family}#`));
      if (!entry) throw new Error(`no ${family} entry written`);
      const moved = `${family}#${(Number(entry.value.split('#')[1]) + 1) % 16}`;
      expect(derivedFromItsItem({ ...entry, value: moved }, accounts), family).toBe(false);
    }
  });
});
