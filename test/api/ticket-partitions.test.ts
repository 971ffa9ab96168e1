import { describe, expect, it } from 'vitest';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { ticketKeys } from '#lib/data/keys.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';

/**
 * Ticket items over partitions of their account (issue 40: in one, every create appended at its newest end, a
 * tail no partition split relieves). A ticket's partition follows from its number, so the newest tickets are
 * about evenly spread and the unfiltered first page reads each partition's newest share at once; where they are
 * not (creation times that do not follow the numbers, as an import's), it reads on, and the page stays exact.
 */
const SEC = 1_000_000;

describe('ticket items over partitions', () => {
  it("put a create's ticket in its number's partition, not the account's one", async () => {
    const account = await createTestAccount();
    await seedTickets(
      account.accountId,
      Array.from({ length: 16 }, (_, i) => ({
        subject: `s${i}`,
        description: 'd',
        requester_email: 'a@p.test',
      })),
    );
    const counts = await Promise.all(
      ticketKeys.itemPartitions(account.accountId).map(async (pk) => {
        const items = await queryAll({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ConsistentRead: true,
        });
        return items.length;
      }),
    );
    expect(counts).toEqual(counts.map(() => 16 / counts.length));
  });

  it('answer the newest first page exactly, where the newest are all in one partition', async () => {
    const account = await createTestAccount();
    const base = Date.now() * 1000 - 3_600 * SEC;
    // Tickets numbered 8, 16, … (one partition) are the newest: a partition's share of the page is not enough.
    const seeded = await seedTickets(
      account.accountId,
      Array.from({ length: 80 }, (_, i) => ({
        subject: `t${i}`,
        description: 'd',
        requester_email: 'b@p.test',
      })),
      { createdUs: (i) => base + i * SEC + ((i + 1) % 8 === 0 ? 600 * SEC : 0) },
    );
    const expected = [...seeded]
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : b.number - a.number))
      .map((t) => t.uuid);
    const caller = callerOf(account);
    const get = (query: Record<string, string>) =>
      listTickets(proxyEvent({ path: '/api/tickets', caller, query }), lambdaContext);
    const skewed = { result: await get({ per_page: '15' }) };
    expect(JSON.parse(skewed.result.body).data.map((t: { uuid: string }) => t.uuid)).toEqual(
      expected.slice(0, 15),
    );
    expect(JSON.parse(skewed.result.body).meta.total).toBe(80);
  });
});
