import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { ticketKeys } from '#lib/data/keys.ts';
import { dynamo, getItem } from '#lib/data/store/client.ts';
import { getTicketByUuid, updateTicketItems } from '#lib/data/tickets/tickets.ts';
import { breachPass, breachTicket, runBreaches } from '#lib/tickets/breaches.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import { formatTimestamp, nowMicros, nowMillis, sleep } from '#lib/time.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { atTime, useManualClock } from '#test/support/clock.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * Service-level breaches on time (decisions.md, "Reply-based service levels"; docs/sla.md), against DynamoDB
 * Local: the breach runner reads the due index, writes each clock's breach once with its event, and a clock
 * completed before its due time never breaches, whatever the runner's faults.
 */

const MIN_MS = 60_000;
const POLICY = {
  sla_policies: [{ name: 'Standard', first_reply_minutes: 1, next_reply_minutes: 1, resolution_minutes: 5 }],
};

/** Every due entry of the file's table is read (test/support/file-table.ts: this file's accounts only). */
const LIMIT = 100_000;

const account = (): Promise<TestAccount> => createTestAccount(POLICY);

describe('service-level breaches', () => {
  const gateway = useGateway();
  /** The service's clock: each test's own, standing still until the test advances it. */
  const clock = useManualClock();

  /** A ticket created `agoMs` before now (its clocks run from then). */
  async function ticketCreatedAgo(a: TestAccount, agoMs: number, body: Record<string, unknown> = {}) {
    const r = await atTime(nowMillis() - agoMs, () =>
      gateway.call('POST', '/api/tickets', {
        key: a.apiKey,
        body: { subject: 'Help', description: 'd', requester_email: 'r@example.com', ...body },
      }),
    );
    expect(r.status).toBe(201);
    return r.body.ticket as { uuid: string; sla: Record<string, { due_at: string } | null> };
  }

  const breachesOf = async (a: TestAccount) =>
    (await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.sla_breached'] })).events as (FeedEvent & {
      data: { metric: string; due_at: string };
    })[];

  const list = async (a: TestAccount, query: string) => {
    const r = await gateway.call('GET', `/api/tickets?${query}`, { key: a.apiKey });
    expect(r.status).toBe(200);
    return r.body as { data: { uuid: string }[]; meta: { total: number } };
  };

  it('writes each clock breach once, at its due time, and moves the ticket into sla=breached with it', async () => {
    const a = await account();
    // One after the other: each sets the service's clock for its create.
    const tickets = [
      await ticketCreatedAgo(a, 10 * MIN_MS, { priority: 'high' }),
      await ticketCreatedAgo(a, 10 * MIN_MS, { priority: 'low' }),
      await ticketCreatedAgo(a, 2 * MIN_MS, { priority: 'high' }),
    ];
    expect((await list(a, 'sla=breached')).meta.total).toBe(0);

    // Runners at once and again: each clock's breach written once.
    await Promise.all([1, 2, 3].map(() => breachPass({ limit: LIMIT })));
    await breachPass({ limit: LIMIT });

    const events = await waitFor(async () => ((await breachesOf(a)).length >= 5 ? breachesOf(a) : false), {
      timeout: 10_000,
      label: 'five breaches',
    });
    const seen = events.map((e) => `${(e.data.object as { uuid: string }).uuid}/${e.data.metric}`).sort();
    expect(seen).toEqual(
      [
        `${tickets[0]?.uuid}/first_reply`,
        `${tickets[0]?.uuid}/resolution`,
        `${tickets[1]?.uuid}/first_reply`,
        `${tickets[1]?.uuid}/resolution`,
        `${tickets[2]?.uuid}/first_reply`,
      ].sort(),
    );
    for (const e of events) {
      const object = e.data.object as { sla: Record<string, { due_at: string; breached_at: string | null }> };
      const clock = object.sla[e.data.metric];
      // breached_at is the due time, never the time the runner noticed it.
      expect(clock?.breached_at).toBe(e.data.due_at);
      expect(clock?.due_at).toBe(e.data.due_at);
      expect(e.data.version).toBeGreaterThan(1);
    }
    // Read again: the GET answers the breach, and the list shows the three, with exact totals under other filters.
    const got = await gateway.call('GET', `/api/tickets/${tickets[0]?.uuid}`, { key: a.apiKey });
    expect(got.body.data.sla.first_reply.breached_at).toBe(got.body.data.sla.first_reply.due_at);
    expect((await list(a, 'sla=breached')).meta.total).toBe(3);
    expect((await list(a, 'sla=breached&priority=high')).data.map((t) => t.uuid).sort()).toEqual(
      [tickets[0]?.uuid, tickets[2]?.uuid].sort(),
    );
    expect((await list(a, 'sla=breached&priority=high&status=open')).meta.total).toBe(2);
    expect((await list(a, 'sla=breached&priority=urgent')).meta.total).toBe(0);
    // With the unbounded filters and search (intersections): exact, as any other filter.
    expect((await list(a, 'sla=breached&search=help')).meta.total).toBe(3);
    expect(
      (await list(a, 'sla=breached&requester_email=r@example.com&priority=low')).data.map((t) => t.uuid),
    ).toEqual([tickets[1]?.uuid]);
    expect((await list(a, 'sla=breached&status=open&priority=high&search=help')).meta.total).toBe(2);
    expect((await list(a, 'sla=breached&search=nothing')).meta.total).toBe(0);
    expect((await list(a, 'sla=breached&per_page=1&page=2')).data).toHaveLength(1);
    expect((await list(a, 'sla=breached&per_page=1')).meta.total).toBe(3);
    const page = (await gateway.call('GET', '/api/tickets?sla=breached&per_page=1', { key: a.apiKey })).body;
    expect(page.links.next).toContain('sla=breached');
    expect((await gateway.call('GET', '/api/tickets?sla=late', { key: a.apiKey })).status).toBe(422);

    // The ticket whose first reply was the only breach leaves the filter with its first reply (the messages
    // write this field; here through the data layer), and resolving the others leaves their first reply breached.
    const stored = await getTicketByUuid(a.accountId, tickets[2]?.uuid as string);
    if (!stored) throw new Error('ticket not found');
    const after = { ...stored.entity, firstReplyAt: formatTimestamp(nowMicros()) };
    await updateTicketItems({
      accountId: a.accountId,
      before: stored.entity,
      after,
      version: stored.version,
      event: {
        type: 'ticket.updated',
        object: presentCreatedTicket(after),
        previous: {},
        version: stored.version + 1,
      },
    });
    const resolved = await gateway.call('PATCH', `/api/tickets/${tickets[0]?.uuid}`, {
      key: a.apiKey,
      body: { status: 'resolved' },
    });
    expect(resolved.status).toBe(200);
    expect((await list(a, 'sla=breached')).data.map((t) => t.uuid).sort()).toEqual(
      [tickets[0]?.uuid, tickets[1]?.uuid].sort(),
    );
    await breachPass({ limit: LIMIT });
    expect(await breachesOf(a)).toHaveLength(5);
  });

  it('a clock completed just before its due time never breaches; a ticket with nothing left to watch has no due entry', async () => {
    const a = await account();
    // Due 1.5 s from now: first reply (1 minute) and, with a 5-minute created_at offset, resolution.
    const replied = await ticketCreatedAgo(a, MIN_MS - 1_500);
    const resolvedTicket = await ticketCreatedAgo(a, 5 * MIN_MS - 1_500);
    // The first reply, as the messages write it, through the data layer; the resolution through PATCH.
    const stored = await getTicketByUuid(a.accountId, replied.uuid);
    if (!stored) throw new Error('ticket not found');
    const after = { ...stored.entity, firstReplyAt: formatTimestamp(nowMicros()) };
    await updateTicketItems({
      accountId: a.accountId,
      before: stored.entity,
      after,
      version: stored.version,
      event: { type: 'ticket.updated', object: presentCreatedTicket(after), previous: {}, version: 2 },
    });
    const patched = await gateway.call('PATCH', `/api/tickets/${resolvedTicket.uuid}`, {
      key: a.apiKey,
      body: { status: 'resolved' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.ticket.sla.resolution.completed_at).not.toBeNull();
    // Past the due time: the runner finds nothing to write for these clocks.
    await clock().advance(2_000);
    await breachPass({ limit: LIMIT });
    const breaches = await breachesOf(a);
    expect(breaches.map((e) => `${(e.data.object as { uuid: string }).uuid}/${e.data.metric}`)).toEqual([
      // The resolved ticket had no first reply: that clock breached (resolving does not answer the requester).
      `${resolvedTicket.uuid}/first_reply`,
    ]);
    const got = await gateway.call('GET', `/api/tickets/${replied.uuid}`, { key: a.apiKey });
    expect(got.body.data.sla.first_reply.breached_at).toBeNull();
    const res = await gateway.call('GET', `/api/tickets/${resolvedTicket.uuid}`, { key: a.apiKey });
    expect(res.body.data.sla.resolution.breached_at).toBeNull();
    expect((await list(a, 'sla=breached')).data.map((t) => t.uuid)).toEqual([resolvedTicket.uuid]);
    // The resolved ticket: first reply breached and written, resolution completed: nothing left in the due index.
    const item = await getItem(ticketKeys.item(a.accountId, orderKeyOfUuid(resolvedTicket.uuid) as string));
    expect(item?.gsi2pk).toBeUndefined();
    const running = await getItem(ticketKeys.item(a.accountId, orderKeyOfUuid(replied.uuid) as string));
    expect(running?.gsi2sk).toMatch(/^\d{15}#/);
  });

  it('a runner killed at any store call of its commit, or losing the answer: the breach is written once', async () => {
    const a = await account();
    const target = async () => {
      const t = await ticketCreatedAgo(a, 2 * MIN_MS);
      return { uuid: t.uuid, orderKey: orderKeyOfUuid(t.uuid) as string };
    };
    // How many store calls one breach takes.
    const probe = await target();
    const { operations } = await withFault(undefined, () => breachTicket(a.accountId, probe.orderKey));
    expect(operations.length).toBeGreaterThanOrEqual(2);
    const uuids = [probe.uuid];
    const modes: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
    for (let at = 1; at <= operations.length; at++) {
      for (const mode of modes) {
        const t = await target();
        uuids.push(t.uuid);
        await withFault({ at, mode }, () => breachTicket(a.accountId, t.orderKey)).catch(() => undefined);
        // The next pass (a new runner, or the same one again).
        await breachTicket(a.accountId, t.orderKey);
        await breachTicket(a.accountId, t.orderKey);
      }
    }
    const events = await waitFor(
      async () => {
        const all = await breachesOf(a);
        return all.length >= uuids.length ? all : false;
      },
      { timeout: 15_000, label: 'a breach per ticket' },
    );
    const perTicket = new Map<string, number>();
    for (const e of events) {
      const uuid = (e.data.object as { uuid: string }).uuid;
      expect(e.data.metric).toBe('first_reply');
      perTicket.set(uuid, (perTicket.get(uuid) ?? 0) + 1);
    }
    expect([...perTicket.keys()].sort()).toEqual([...uuids].sort());
    expect([...perTicket.values()].every((n) => n === 1)).toBe(true);
    expect((await list(a, 'sla=breached')).meta.total).toBe(uuids.length);
  });

  it("one ticket's failed breach holds no other's: the pass goes on, the failed one is written at the next", async () => {
    const a = await account();
    const first = await ticketCreatedAgo(a, 2 * MIN_MS);
    const second = await ticketCreatedAgo(a, 2 * MIN_MS);
    // The first ticket's breach: its commit fails (its event's place was taken with the pass's read).
    const errors: unknown[] = [];
    const { result } = await withFault({ operation: 'TransactWriteItems', mode: 'lost-request' }, () =>
      breachPass({ limit: LIMIT, concurrency: 1, onError: (e) => errors.push(e) }),
    );
    expect(result.failed).toBe(1);
    expect(errors).toHaveLength(1);
    expect(result.breached).toBeGreaterThanOrEqual(1);
    await breachPass({ limit: LIMIT });
    const events = await waitFor(async () => ((await breachesOf(a)).length >= 2 ? breachesOf(a) : false), {
      timeout: 10_000,
      label: 'both breaches',
    });
    expect(events.map((e) => (e.data.object as { uuid: string }).uuid).sort()).toEqual(
      [first.uuid, second.uuid].sort(),
    );
  });

  it('a store stalled around the due time: the breach is written once, late by no more than the stall', async () => {
    const a = await account();
    const t = await ticketCreatedAgo(a, MIN_MS - 1_000); // first reply due in 1 s
    const due = Date.parse(t.sla.first_reply?.due_at as string);
    const STALL_MS = 3_000;
    const POLL_MS = 100;
    let stalled = true;
    // Each call sent while the store stalls answers STALL_MS of the service's time later.
    const stall = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
      if (stalled) await sleep(STALL_MS);
      return next(args);
    };
    dynamo.middlewareStack.add(stall as never, { step: 'initialize', name: 'stallForSla' });
    try {
      const until = nowMillis() + STALL_MS * 3;
      const run = runBreaches(until, { limit: LIMIT, pollMs: POLL_MS });
      await clock().advance(STALL_MS + 500);
      stalled = false;
      await clock().advanceTo(until);
      await run;
    } finally {
      dynamo.middlewareStack.remove('stallForSla');
    }
    const events = await waitFor(async () => ((await breachesOf(a)).length >= 1 ? breachesOf(a) : false), {
      timeout: 10_000,
      label: 'the breach',
    });
    expect(events).toHaveLength(1);
    const late = Date.parse(events[0]?.created_at as string) - due;
    console.log(`sla breach under a ${STALL_MS} ms stall: written ${late} ms after its due time`);
    expect(late).toBeGreaterThan(0);
    // The store was stalled from 1 s before the due time to STALL_MS + 500 ms after that start, and a call sent
    // just before the stall ended still waits STALL_MS: late by that stall and no more than a poll besides.
    expect(late).toBeLessThanOrEqual(STALL_MS + 500 - 1_000 + STALL_MS + POLL_MS);
    expect(events[0]?.data.due_at).toBe(t.sla.first_reply?.due_at);
  });
});
