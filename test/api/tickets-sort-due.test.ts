import { describe, expect, it } from 'vitest';
import { nowMicros } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { atTime } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * `GET /api/tickets?sort=due` (decisions.md, "Reply-based service levels"): soonest uncompleted due time first,
 * tickets without one last, then newest first; with every filter, exact totals, links that keep it. The expected
 * order is computed here from the newest-first list (exact) and each item's own `sla`.
 */
type Item = { uuid: string; sla: Record<string, { due_at: string; completed_at: string | null } | null> };

/** The model's key: the soonest due time of a clock not completed, or none. */
function soonest(item: Item): number | undefined {
  const dues = Object.entries(item.sla)
    .filter(([name, c]) => name !== 'policy' && c && typeof c === 'object' && c.completed_at === null)
    .map(([, c]) => Date.parse((c as { due_at: string }).due_at));
  return dues.length ? Math.min(...dues) : undefined;
}

describe('GET /api/tickets?sort=due', () => {
  const gateway = useGateway();
  it('orders by the soonest uncompleted due time, none last, ties newest first, under every filter, with exact totals', async () => {
    const account = await createTestAccount({
      sla_policies: [
        { name: 'Urgent', priority: 'urgent', first_reply_minutes: 10 },
        { name: 'High', priority: 'high', first_reply_minutes: 30, resolution_minutes: 60 },
        { name: 'Low', priority: 'low', resolution_minutes: 20 },
      ],
    });
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key: account.apiKey, ...(body ? { body } : {}) });
    const start = nowMicros() - 60 * 60_000_000;
    const specs: [string, string, number][] = [
      ['high', 'a@example.com', 0],
      ['urgent', 'b@example.com', 5],
      ['medium', 'a@example.com', 7],
      ['urgent', 'a@example.com', 9],
      ['low', 'b@example.com', 11],
      ['high', 'b@example.com', 13],
      ['medium', 'b@example.com', 15],
      ['low', 'a@example.com', 30],
    ];
    const uuids: string[] = [];
    for (const [priority, email, minutes] of specs) {
      const at = start + minutes * 60_000_000;
      const r = await atTime(at / 1000, () =>
        call('POST', '/api/tickets', {
          subject: `Order ${priority}`,
          description: 'd',
          requester_email: email,
          priority,
        }),
      );
      expect(r.status).toBe(201);
      uuids.push(r.body.ticket.uuid);
    }
    // A first reply (through PATCH nothing can; resolving completes the resolution clock) and a status mix.
    expect((await call('PATCH', `/api/tickets/${uuids[4]}`, { status: 'resolved' })).status).toBe(200);
    expect((await call('PATCH', `/api/tickets/${uuids[0]}`, { status: 'pending' })).status).toBe(200);
    // A priority change moves every due time: medium (none) to urgent.
    expect((await call('PATCH', `/api/tickets/${uuids[6]}`, { priority: 'urgent' })).status).toBe(200);

    const everything = async (query: string) => {
      const items: Item[] = [];
      for (let page = 1; ; page++) {
        const r = await call('GET', `/api/tickets?per_page=100&page=${page}${query}`);
        expect(r.status).toBe(200);
        items.push(...r.body.data);
        if (page >= r.body.meta.last_page) return { items, total: r.body.meta.total as number };
      }
    };
    const expectedOrder = (items: Item[]) =>
      items
        .map((item, i) => ({ item, i, due: soonest(item) }))
        .sort((a, b) => {
          if (a.due === undefined || b.due === undefined) {
            return a.due === b.due ? a.i - b.i : a.due === undefined ? 1 : -1;
          }
          return a.due - b.due || a.i - b.i; // the newest-first list: ties keep it
        })
        .map((x) => x.item.uuid);

    for (const query of [
      '',
      '&status=open',
      '&priority=urgent',
      '&status=open&priority=urgent',
      '&requester_email=a@example.com',
      '&requester_email=b@example.com&status=open',
      '&search=order',
      '&search=order&priority=high',
      '&status=closed',
    ]) {
      const newest = await everything(query);
      const sorted = await everything(`&sort=due${query}`);
      expect(sorted.total, query).toBe(newest.total);
      expect(
        sorted.items.map((i) => i.uuid),
        query,
      ).toEqual(expectedOrder(newest.items));
      // Pages of 3 put together give the same order; links keep the sort.
      const paged: string[] = [];
      for (let page = 1; page <= Math.max(1, Math.ceil(newest.total / 3)); page++) {
        const r = await call('GET', `/api/tickets?sort=due&per_page=3&page=${page}${query}`);
        paged.push(...r.body.data.map((i: Item) => i.uuid));
        if (r.body.links.next) expect(r.body.links.next).toContain('sort=due');
        expect(r.body.meta.total).toBe(newest.total);
      }
      expect(paged, query).toEqual(expectedOrder(newest.items));
    }
    // Sanity of the fixture: tickets without a due time exist and come last.
    const all = await everything('&sort=due');
    expect(soonest(all.items.at(-1) as Item)).toBeUndefined();
    expect(soonest(all.items[0] as Item)).toBeDefined();
    expect((await call('GET', '/api/tickets?sort=newest')).status).toBe(422);
  });

  it('large tickets whose sorted postings are put before their commit: listed once it lands, never when it is lost', async () => {
    const account = await createTestAccount({
      sla_policies: [{ name: 'All', first_reply_minutes: 30 }],
    });
    const custom_fields = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, `v${i}`]));
    const body = { subject: 'Big one', description: 'd', requester_email: 'big@example.com', custom_fields };
    const create = () => gateway.call('POST', '/api/tickets', { key: account.apiKey, body });
    const dry = await withFault(undefined, create);
    expect(dry.result.status).toBe(201);
    const at = dry.operations.indexOf('TransactWriteItems') + 1;
    // The marked puts went first (a BatchWriteItem), then the commit, which is lost here.
    expect(dry.operations.slice(0, at)).toContain('BatchWriteItem');
    // The commit lost (the service may try it again: then it lands): the list holds what exists, in due order.
    const lost = await withFault({ at, mode: 'lost-request' }, create);
    expect([201, 503]).toContain(lost.result.status);
    const second = await create();
    expect(second.status).toBe(201);
    const newest = await gateway.call('GET', '/api/tickets?per_page=10', { key: account.apiKey });
    const exist = newest.body.data.map((t: { uuid: string }) => t.uuid).reverse(); // oldest (soonest due) first
    expect(exist).toHaveLength(lost.result.status === 201 ? 3 : 2);
    for (const query of ['', '&status=open', '&priority=medium']) {
      const r = await gateway.call('GET', `/api/tickets?sort=due&per_page=10${query}`, {
        key: account.apiKey,
      });
      expect(r.status).toBe(200);
      expect(r.body.meta.total, query).toBe(exist.length);
      expect(
        r.body.data.map((t: { uuid: string }) => t.uuid),
        query,
      ).toEqual(exist);
    }
  });
});
