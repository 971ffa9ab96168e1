import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { orderKeys } from '#lib/data/keys.ts';
import { batchPutAll, getItem } from '#lib/data/store/client.ts';
import { ATTR } from '#lib/data/store/items.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The engine's finder for a caller that takes each entity out of a dimension (lib/data/index/oldest.ts: the
 * erasure's, for a person's tickets by their address): postings oldest first, as written, each with the entity
 * it names, a posting no entity holds included, so the caller can tell it and drop it.
 */
describe('a dimension oldest first', () => {
  const gateway = useGateway();

  it('lists every posting after the counters, with its entity or none; goes on after a place; drops an orphan', async () => {
    const account = await createTestAccount();
    const id = account.accountId;
    const created: string[] = [];
    for (const subject of ['First', 'Second', 'Third']) {
      const response = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject, description: 'd', requester_email: 'Oda@Oldest.test' },
      });
      expect(response.status, response.text).toBe(201);
      created.push(response.body.ticket.uuid);
    }
    const dim = dimension.email(id, 'oda@oldest.test');
    // A failed create's orphan: a posting whose ticket was never written (created long before the others).
    const orphan = orderKeys.of(1_000_000, 999_999);
    await batchPutAll([
      { ...tickets.index.keys.posting(id, dim, orphan), type: 'ticket_posting', [ATTR.unconfirmed]: 1 },
    ]);

    const all = await tickets.oldestListed(id, dim, { after: null, limit: 10 });
    expect(all.map((l) => l.at)).toEqual([orphan, ...created.map((u) => orderKeyOfUuid(u))]);
    expect(all.map((l) => l.stored?.entity.uuid)).toEqual([undefined, ...created]);
    expect(all[0]?.createdMicros).toBe(1_000_000);
    expect(all[1]?.stored?.version).toBe(1);

    const rest = await tickets.oldestListed(id, dim, { after: all[1]?.at ?? null, limit: 10 });
    expect(rest.map((l) => l.stored?.entity.uuid)).toEqual(created.slice(1));
    const keysOnly = await tickets.oldestListed(id, dim, { after: null, limit: 2, read: false });
    expect(keysOnly.map((l) => [l.at, l.stored])).toEqual([
      [orphan, undefined],
      [all[1]?.at, undefined],
    ]);

    await tickets.dropPosting(id, dim, orphan);
    expect(await getItem(tickets.index.keys.posting(id, dim, orphan))).toBeUndefined();
    const after = await tickets.oldestListed(id, dim, { after: null, limit: 10 });
    expect(after.map((l) => l.stored?.entity.uuid)).toEqual(created);
  });
});
