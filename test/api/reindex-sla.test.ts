import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { ticketKeys } from '#lib/data/keys.ts';
import { batchDeleteAll, dynamo, tableName } from '#lib/data/store/client.ts';
import { entityOf } from '#lib/data/store/items.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { nowMicros } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { admin } from '#test/support/admin.ts';
import { atTime } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { entityItemsOf, indexSnapshot } from '#test/support/index-snapshot.ts';

/**
 * `tickets reindex SLUG` and the service-level index (docs/data-model.md, "Reindex"; docs/sla.md): tickets stored
 * before the clocks (no due entry, no `sort=due` postings) get both, so `sort=due` and the breach runner see every
 * ticket; and sorted postings left by drift (an older due time, a ticket gone or out of the dimension) are swept,
 * so the index is what creating the tickets writes.
 */
const gateway = useGateway();
const MIN_US = 60_000_000;

describe('tickets reindex and the service-level index', () => {
  it('writes every due entry and sort=due posting, and sweeps stale sorted postings', async () => {
    // A policy of earlier releases: a resolution target only (the ticket's `due_at`).
    const a = await createTestAccount({ sla_policies: [{ name: 'All', resolution_minutes: 60 }] });
    const id = a.accountId;
    const create = async (agoUs: number) => {
      const r = await atTime((nowMicros() - agoUs) / 1000, () =>
        gateway.call('POST', '/api/tickets', {
          key: a.apiKey,
          body: { subject: 'Help', description: 'd', requester_email: 'r@example.com' },
        }),
      );
      expect(r.status, r.text).toBe(201);
      return r.body.ticket.uuid as string;
    };
    // Overdue (created 2 h ago), due in 50 min, and one resolved (nothing to watch, last in sort=due).
    const overdue = await create(120 * MIN_US);
    const soon = await create(10 * MIN_US);
    const resolved = await create(5 * MIN_US);
    const patched = await gateway.call('PATCH', `/api/tickets/${resolved}`, {
      key: a.apiKey,
      body: { status: 'resolved' },
    });
    expect(patched.status).toBe(200);

    const sortDue = async () => {
      const r = await gateway.call('GET', '/api/tickets?sort=due', { key: a.apiKey });
      expect(r.status).toBe(200);
      return { total: r.body.meta.total, uuids: r.body.data.map((t: { uuid: string }) => t.uuid) };
    };
    const dueEntries = async (): Promise<Record<string, unknown[]>> =>
      Object.fromEntries(
        (await entityItemsOf('TICKET', id)).map((item) => [item.uuid as string, [item.gsi2pk, item.gsi2sk]]),
      );
    const expectedIndex = await indexSnapshot('TICKET', id);
    const expectedEntries = await dueEntries();
    expect(Object.values(expectedEntries).filter(([pk]) => pk !== undefined)).toHaveLength(2);
    expect(await sortDue()).toEqual({ total: 3, uuids: [overdue, soon, resolved] });

    // Tickets as stored before the clocks: no targets, no due entry, no sorted postings.
    const items = await entityItemsOf('TICKET', id);
    for (const item of items) {
      await dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: 'REMOVE gsi2pk, gsi2sk, slaTargets',
        }),
      );
      await batchDeleteAll(
        tickets.items(id, entityOf<Ticket>(item)).sortedPostings.map(({ pk, sk }) => ({ pk, sk })),
      );
    }
    // And drift: sorted postings of an older due time, of a ticket gone, of a ticket out of the dimension.
    const soonKey = orderKeyOfUuid(soon) as string;
    const stale = [
      ticketKeys.sorted(id, 'due', dimension.all, '00000000000000001', soonKey),
      ticketKeys.sorted(id, 'due', dimension.status('open'), '00000000000000001', soonKey),
      ticketKeys.sorted(id, 'due', dimension.all, '00000000000000002', `${soonKey.slice(0, -1)}9`),
      ticketKeys.sorted(id, 'due', dimension.status('open'), '~', orderKeyOfUuid(resolved) as string),
    ];
    for (const key of stale) {
      await dynamo.send(
        new PutCommand({ TableName: tableName(), Item: { ...key, type: 'ticket_posting_sorted' } }),
      );
    }
    expect(await sortDue()).not.toEqual({ total: 3, uuids: [overdue, soon, resolved] });
    expect((await breachPass({ limit: 100_000 })).breached).toBe(0);

    const { stdout } = await admin('tickets', 'reindex', a.slug);
    expect(JSON.parse(stdout)).toMatchObject({ tickets: 3, stale_items_removed: stale.length });

    expect(await indexSnapshot('TICKET', id)).toEqual(expectedIndex);
    expect(await dueEntries()).toEqual(expectedEntries);
    expect(await sortDue()).toEqual({ total: 3, uuids: [overdue, soon, resolved] });
    // The runner sees the overdue ticket now: its resolution breach, once, at its due time.
    await breachPass({ limit: 100_000 });
    await breachPass({ limit: 100_000 });
    const breaches = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.sla_breached'] });
    expect(
      breaches.events.map((e) => [
        (e.data.object as { uuid: string }).uuid,
        (e.data as { metric?: string }).metric,
      ]),
    ).toEqual([[overdue, 'resolution']]);
  });
});
