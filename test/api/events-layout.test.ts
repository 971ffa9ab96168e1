import { describe, expect, it } from 'vitest';
import { EVENT_SHARDS, eventKeys } from '#lib/data/keys.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Where the feed's items are (docs/data-model.md, "Events"): spread over the account's shard partitions.
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

describe('the feed spread over partitions', () => {
  it("puts each place's items in its shard's partition: 40 creates write to many partitions", async () => {
    const account = await createTestAccount();
    for (let i = 0; i < 40; i++) {
      const r = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: ticketBody });
      expect(r.status).toBe(201);
    }
    const partitions = await itemsByPartition(account.accountId);
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
});
