import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid, packOrderKey } from '#lib/data/index/order-key.ts';
import { postingsAmong, queryBlocks } from '#lib/data/index/order-key-reads.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The by-key read of the list plan (test/unit/ticket-index.test.ts chooses between the reads): at the HTTP tests'
 * size the plan always reads blocks whole, so both reads are compared here directly.
 */
describe('the reads the plan chooses between', () => {
  const gateway = useGateway();
  const CF_KEYS = Array.from({ length: 50 }, (_, i) => `k${i}`);

  it('give the same keys: blocks whole, and postings by key, including those put before the commit', async () => {
    const account = await createTestAccount();
    const create = async (body: Record<string, unknown>) => {
      const response = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject: 'Lamp', description: 'd', requester_email: 'ann@example.com', ...body },
      });
      expect(response.status, response.text).toBe(201);
      return orderKeyOfUuid(response.body.ticket.uuid) as string;
    };
    // More items than one transaction holds: the last custom fields' postings and block keys are put first,
    // marked, and count only once the ticket is read and holds them.
    const heavy = await create({
      subject: Array.from({ length: 30 }, (_, i) => `word${i}x`).join(' '),
      custom_fields: Object.fromEntries(CF_KEYS.map((k) => [k, 'v'])),
    });
    // Of another priority: a status's postings are its queue's, one partition a priority (postingSources).
    const light = await create({ custom_fields: { k49: 'other' }, priority: 'urgent' });
    const id = account.accountId;
    for (const k of ['k0', 'k30', 'k49']) {
      const dim = dimension.customField(id, k, 'v');
      expect(await postingsAmong(tickets.index, id, dim, [heavy, light]), k).toEqual(new Set([heavy]));
      expect(await queryBlocks(tickets.index, id, dim), k).toEqual(new Set([packOrderKey(heavy)]));
    }
    const both = new Set([heavy, light]);
    expect(await postingsAmong(tickets.index, id, dimension.status('open'), [heavy, light])).toEqual(both);
    expect(await postingsAmong(tickets.index, id, dimension.priority('urgent'), [heavy, light])).toEqual(
      new Set([light]),
    );
    expect(await queryBlocks(tickets.index, id, dimension.status('open'))).toEqual(
      new Set([...both].map(packOrderKey)),
    );
  });
});
