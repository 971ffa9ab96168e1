import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { reserveIds } from '#lib/data/accounts.ts';
import { dynamo, queryAll, tableName } from '#lib/data/client.ts';
import { eventItems, eventsSince } from '#lib/data/events.ts';
import { EVENT_SHARDS, eventKeys } from '#lib/data/keys.ts';
import { nowMicros } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Where the feed's items are (docs/data-model.md, "Events"): spread over the account's shard partitions, and
 * events written before the feed was spread (one partition per account) still served in their places.
 */
const gateway = useGateway();

const ticketBody = { subject: 'Printer on fire', description: 'Smoke.', requester_email: 'ann@client.test' };

/** Every item of the account's feed partitions, by partition. */
async function itemsByPartition(accountId: string) {
  const found = new Map<string, Record<string, unknown>[]>();
  for (const pk of eventKeys.partitions(accountId)) {
    const items = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    });
    if (items.length > 0) found.set(pk, items);
  }
  return found;
}

/**
 * An event as a version before the spread counters wrote it: its place taken from the account's one `event`
 * sequence (as reserveIds did it), its items in `EVENTS#<acc>` (the version before the spread feed).
 */
async function writeLegacyEvent(accountId: string, object: unknown) {
  const draft = { type: 'ticket.created', object, version: 1 };
  const { event } = await reserveIds(accountId, { event: 1 });
  const { id, items } = eventItems(accountId, event as number, draft, nowMicros());
  for (const item of items) {
    await dynamo.send(
      new PutCommand({ TableName: tableName(), Item: { ...item, pk: eventKeys.legacyPartition(accountId) } }),
    );
  }
  return id;
}

describe('the feed spread over partitions', () => {
  it("puts each place's items in its shard's partition: 40 creates write to many partitions, none to the legacy one", async () => {
    const account = await createTestAccount();
    for (let i = 0; i < 40; i++) {
      const r = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: ticketBody });
      expect(r.status).toBe(201);
    }
    const partitions = await itemsByPartition(account.accountId);
    expect(partitions.has(eventKeys.legacyPartition(account.accountId))).toBe(false);
    // Each ticket's events go to the shard of its creation time: 40 tickets spread over most of the 16 (14.8 on
    // average; fewer than 10 one time in ~10^5).
    expect(partitions.size).toBeGreaterThanOrEqual(10);
    for (const [pk, items] of partitions) {
      for (const item of items) {
        const { seq } = eventKeys.parse(String(item.sk));
        expect(pk).toBe(eventKeys.shardPartition(account.accountId, seq % EVENT_SHARDS));
      }
    }
    const { events } = await readFeedToEnd(gateway.call, account.apiKey, { limit: 7 });
    expect(events.filter((e) => e.type === 'ticket.created')).toHaveLength(40);
  });

  it('serves events written in the one-partition layout in their places, among new ones: pages, cursors, one event, since', async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    // What the legacy events hold: a ticket as its GET answers it.
    const made = await gateway.call('POST', '/api/tickets', { key, body: ticketBody });
    const object = (await gateway.call('GET', `/api/tickets/${made.body.ticket.uuid}`, { key })).body.data;
    const legacy: string[] = [];
    for (let i = 0; i < 3; i++) legacy.push(await writeLegacyEvent(account.accountId, object));
    for (let i = 0; i < 2; i++) {
      expect((await gateway.call('POST', '/api/tickets', { key, body: ticketBody })).status).toBe(201);
    }
    legacy.push(await writeLegacyEvent(account.accountId, object));
    expect((await gateway.call('POST', '/api/tickets', { key, body: ticketBody })).status).toBe(201);

    const { events } = await readFeedToEnd(gateway.call, key, { limit: 100 });
    const ids = events.map((e) => e.id);
    // In place order: the legacy sequence's places (below EVENT_PLACE_BASE) first, in their order, then the
    // shards' places.
    expect(ids).toEqual([...ids].sort());
    const shape = events.map((e) => (legacy.includes(e.id) ? 'legacy' : e.type));
    expect(shape.slice(-8)).toEqual([
      'legacy',
      'legacy',
      'legacy',
      'legacy',
      'ticket.created',
      'ticket.created',
      'ticket.created',
      'ticket.created',
    ]);
    // The reader that passed the legacy places sealed their sequence: a writer of the version before fails
    // before its commit, instead of taking a place below events already served.
    await expect(writeLegacyEvent(account.accountId, object)).rejects.toThrow();
    for (const limit of [1, 2, 3]) {
      for (const [i, id] of ids.entries()) {
        const rest = await readFeedToEnd(gateway.call, key, { after: id, limit });
        expect(
          rest.events.map((e) => e.id),
          `after ${id}, limit ${limit}`,
        ).toEqual(ids.slice(i + 1));
      }
    }
    for (const id of legacy) {
      const one = await gateway.call('GET', `/api/events/${id}`, { key });
      expect(one.status).toBe(200);
      expect(one.body.data.id).toBe(id);
    }
    const since = await eventsSince(account.accountId, Date.now() - 60_000, 100);
    expect(since.events.map((e) => e.id)).toEqual(ids);
  });
});
