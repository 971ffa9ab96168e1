import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { webhookKeys } from '#lib/data/keys.ts';
import { getItem } from '#lib/data/store/client.ts';
import { LOG_LANES } from '#lib/data/webhook-deliveries/attempts.ts';
import { getDelivery, listDeliveryAttempts } from '#lib/data/webhook-deliveries.ts';
import { nowMillis } from '#lib/time.ts';
import { DISABLED_REASONS, postWebhook } from '#lib/webhooks/deliver.ts';
import { redeliver, UnknownEvent } from '#lib/webhooks/redeliver.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { createTestEndpoint, type Receiver, startReceiver, useDispatcher } from '#test/support/webhooks.ts';

/**
 * The webhook dispatcher end to end (decisions.md, "Webhooks"; docs/webhooks.md): changes through the API, the
 * table's stream read by `npm start`'s dispatcher (in this process, on the tests' DynamoDB Local), deliveries to
 * real receivers on 127.0.0.1 that verify each one with the standardwebhooks library. The retry schedule and the
 * attempt limit are shortened (read at each use). The service's clock is the file's manual clock: the stream's
 * reader and the runners look again, retries fall due and attempts are cut only as the tests advance it.
 */
process.env.WEBHOOK_RETRY_SCHEDULE = '1,1,1,1,1';
process.env.WEBHOOK_TIMEOUT_MS = '1000';

const clock = useManualClock({ wholeFile: true });
const gateway = useGateway();
useDispatcher();

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  process.env.WEBHOOK_RETRY_SCHEDULE = '1,1,1,1,1';
  process.env.WEBHOOK_TIMEOUT_MS = '1000';
});

async function receiver(options: Parameters<typeof startReceiver>[0] = {}) {
  const started = await startReceiver(options);
  receivers.push(started);
  return started;
}

/** A fresh account (the dispatcher serves every account of the file's table), and calls of its API key. */
async function account() {
  const created = await createTestAccount();
  const call = async (method: string, path: string, body?: unknown) => {
    const answer = await gateway.call(method, path, { key: created.apiKey, ...(body ? { body } : {}) });
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${answer.text}`);
    return answer;
  };
  return { ...created, call };
}

type Account = Awaited<ReturnType<typeof account>>;

/** Every event of the account so far (the feed read to its end). */
async function allEvents(a: Account) {
  const events: { id: string; type: string; created_at: string }[] = [];
  let after: string | null = null;
  // To a null cursor: a page that only passed void places is empty and still names a cursor.
  for (let pages = 0; pages < 1_000; pages++) {
    const page = await a.call('GET', `/api/events?limit=100${after ? `&after=${after}` : ''}`);
    events.push(...page.body.data);
    after = page.body.next_cursor;
    if (!after) return events;
  }
  throw new Error('the feed did not end');
}

let tickets = 0;
const createTicket = (a: Account) =>
  a.call('POST', '/api/tickets', {
    subject: `Printer ${++tickets}`,
    description: 'Smoke.',
    requester_email: 'ann@client.test',
  });

/** Runs `work` over 0..n-1, `lanes` at a time. */
async function times(n: number, lanes: number, work: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

/**
 * The first test's changes through the API, 8 at once: 50 ticket creates, 30 ticket updates, 25 deal creates (each
 * with a new contact: deal.created and contact.created), 20 deal updates, 25 contact updates. 150 changes, 175 events,
 * 105 of them subscribed: enough to pass every size the dispatcher and the checks go by, as the 300 changes they were
 * did (26 s of the file's 64 s in `npm test`): the feed's page of 100 (read to its end: 2 pages), an endpoint's window
 * from its first 2 attempts to its widest, 48, and then full (WEBHOOK_CONCURRENCY_PER_ENDPOINT; it widens by one an
 * answer), the attempt log's 64 lanes (LOG_LANES) and its page of 100 (its total counted past it: a total capped at a
 * page fails here). The stream reader hands the events to the fan-out in several batches as it reads along (4 of 29 to
 * 55 events in a run here; the 300 changes, 8 of 28 to 64).
 */
const MIX = { ticketCreates: 50, ticketUpdates: 30, dealCreates: 25, dealUpdates: 20, contactUpdates: 25 };
const MIX_CHANGES = Object.values(MIX).reduce((a, b) => a + b, 0);
const MIX_EVENTS = MIX_CHANGES + MIX.dealCreates;
const MIX_WANTED = MIX.ticketCreates + MIX.ticketUpdates + MIX.dealCreates;

describe('webhook dispatcher', () => {
  it(`delivers every event of a subscribed type of ${MIX_CHANGES} mixed changes, verified, and none of the others`, async () => {
    const a = await account();
    const hook = await receiver();
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.*', 'contact.created'],
    });
    const started = Date.now();
    // MIX: sized by what it must pass (above).
    expect(MIX_EVENTS).toBeGreaterThan(100);
    expect(MIX_WANTED).toBeGreaterThan(Math.max(100, LOG_LANES, 2 + 2 * 48));
    const ticketIds: string[] = [];
    await times(MIX.ticketCreates, 8, async () => ticketIds.push((await createTicket(a)).body.ticket.uuid));
    const deals: { uuid: string; contact: string }[] = [];
    await times(MIX.dealCreates, 8, async (i) => {
      const deal = await a.call('POST', '/api/deals', {
        name: `Deal ${i}`,
        amount: 100 + i,
        contact_email: `buyer${i}@client.test`,
        contact_first_name: `Buyer${i}`,
      });
      deals.push({ uuid: deal.body.data.uuid, contact: deal.body.data.contact.uuid });
    });
    await times(MIX.ticketUpdates, 8, (i) =>
      a.call('PATCH', `/api/tickets/${ticketIds[i]}`, { priority: 'urgent' }),
    );
    await times(MIX.dealUpdates, 8, (i) =>
      a.call('PATCH', `/api/deals/${deals[i]?.uuid}`, { status: 'won' }),
    );
    await times(MIX.contactUpdates, 8, (i) =>
      a.call('PATCH', `/api/contacts/${deals[i]?.contact}`, { last_name: `L${i}` }),
    );
    const changed = Date.now();
    const changedAt = nowMillis();

    const events = await allEvents(a);
    expect(events).toHaveLength(MIX_EVENTS);
    const wanted = events.filter((e) => e.type.startsWith('ticket.') || e.type === 'contact.created');
    const others = events.filter((e) => !wanted.includes(e));
    expect(wanted).toHaveLength(MIX_WANTED);
    await clock().advanceUntil(() => wanted.every((e) => hook.byId().has(e.id)), {
      within: 60_000,
      label: 'every subscribed event at the receiver',
    });
    const delivered = nowMillis();
    // Nothing else arrives: the dispatcher has a second of the clock to (wrongly) send the rest.
    await clock().advance(1_000);

    const received = hook.byId();
    expect(hook.deliveries.every((d) => d.verified)).toBe(true);
    expect([...received.keys()].sort()).toEqual(wanted.map((e) => e.id).sort());
    expect(others.filter((e) => received.has(e.id))).toEqual([]);
    const duplicates = [...received.values()].filter((d) => d.length > 1).length;
    expect(duplicates).toBe(0);
    // Each one is the event as GET /api/events/{id} answers it, with the contract's headers.
    const sample = wanted[Math.floor(wanted.length / 2)] as { id: string };
    const one = (received.get(sample.id) ?? [])[0];
    const asServed = await a.call('GET', `/api/events/${sample.id}`);
    expect(JSON.parse(one?.body ?? '')).toEqual(asServed.body.data);
    expect(one?.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': expect.stringMatching(/^deskpipe-webhooks\/\d+\.\d+\.\d+$/),
    });
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 100 });
    expect(log.total).toBe(wanted.length);
    expect(log.data.every((attempt) => attempt.status === 204 && attempt.attempt === 1)).toBe(true);
    const latency = wanted
      .map((e) => (received.get(e.id)?.[0]?.at ?? 0) - Date.parse(e.created_at))
      .sort((x, y) => x - y);
    const at = (q: number) => latency[Math.min(latency.length - 1, Math.floor(q * latency.length))];
    console.log(
      `${MIX_CHANGES} changes (${events.length} events) in ${changed - started} ms; the ${wanted.length} subscribed all ` +
        `delivered ${delivered - changedAt} ms of the clock after the last change; from an event's commit to its receipt: ` +
        `p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${at(1)} ms; ${others.length} unsubscribed, none sent; ` +
        `duplicates ${duplicates}`,
    );
  }, 120_000);

  it('retries a receiver that is down, then answers 500, then 200: delivered with the same webhook-id, each attempt logged', async () => {
    const a = await account();
    const probe = await startReceiver();
    const { port, secret } = probe;
    await probe.close(); // nothing listens on the port: the first attempt is refused
    const endpoint = await createTestEndpoint(a.accountId, {
      url: `http://127.0.0.1:${port}/hook`,
      secret,
      events: ['ticket.created'],
    });
    await createTicket(a);
    const [event] = await allEvents(a);
    if (!event) throw new Error('no event');
    const refused = await clock().advanceUntil(
      async () =>
        (await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 })).total === 1,
      { within: 10_000, label: 'the refused attempt' },
    );
    expect(refused).toBe(true);
    const hook = await receiver({ port, secret });
    hook.answer((_, i) => ({ status: i === 0 ? 500 : 200 }));
    await clock().advanceUntil(
      async () => (await getDelivery(a.accountId, endpoint.id, event.id))?.state === 'succeeded',
      { within: 15_000, label: 'the delivery to succeed' },
    );
    expect(hook.deliveries.map((d) => [d.webhookId, d.verified, d.answered])).toEqual([
      [event.id, true, 500],
      [event.id, true, 200],
    ]);
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 });
    expect(log.total).toBe(3);
    expect(log.data.map((x) => [x.eventId, x.eventType, x.attempt, x.status, x.error])).toEqual([
      [event.id, 'ticket.created', 3, 200, null],
      [event.id, 'ticket.created', 2, 500, null],
      [event.id, 'ticket.created', 1, null, 'connection_refused'],
    ]);
    const [success, failed, first] = log.data;
    expect(success?.nextAttemptAt).toBeNull();
    expect(failed?.nextAttemptAt).toBeGreaterThanOrEqual((failed?.at ?? 0) + 1000);
    expect(first?.nextAttemptAt).toBeGreaterThanOrEqual((first?.at ?? 0) + 1000);
    // Pages of the log: newest first, exact total.
    const page2 = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 2, perPage: 2 });
    expect(page2).toEqual({ total: 3, data: [first] });
    const stored = await getItem(webhookKeys.endpoint(a.accountId, endpoint.id));
    expect(stored).toMatchObject({ enabled: true, failingSince: null });
    expect(stored?.lastSuccessAt).toBeGreaterThan(0);
    expect(stored?.gsi2sk).toBeUndefined();
    expect(stored?.gsi1sk).toBeUndefined();
  });

  it('disables an endpoint that answers 410 Gone, fails the delivery, and sends it nothing more', async () => {
    const a = await account();
    const hook = await receiver();
    hook.answer(() => ({ status: 410 }));
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['*'],
    });
    await createTicket(a);
    const [event] = await allEvents(a);
    if (!event) throw new Error('no event');
    await clock().advanceUntil(
      async () => (await getDelivery(a.accountId, endpoint.id, event.id))?.state === 'failed',
      { within: 10_000, label: 'the delivery to fail' },
    );
    const stored = await getItem(webhookKeys.endpoint(a.accountId, endpoint.id));
    expect(stored).toMatchObject({ enabled: false, disabledReason: DISABLED_REASONS.gone });
    expect(await getDelivery(a.accountId, endpoint.id, event.id)).toMatchObject({
      state: 'failed',
      attempts: 1,
      lastStatus: 410,
    });
    await createTicket(a);
    // The disabled endpoint is sent nothing for the new ticket within 1.5 s of the clock.
    await clock().advance(1_500);
    expect(hook.deliveries).toHaveLength(1);
  });

  it('retries a 429 with Retry-After: 3 no sooner than 3 seconds, though the schedule says 1', async () => {
    const a = await account();
    const hook = await receiver();
    hook.answer((_, i) => (i === 0 ? { status: 429, headers: { 'Retry-After': '3' } } : { status: 200 }));
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.created'],
    });
    await createTicket(a);
    const [event] = await allEvents(a);
    if (!event) throw new Error('no event');
    await clock().advanceUntil(
      async () => (await getDelivery(a.accountId, endpoint.id, event.id))?.state === 'succeeded',
      { within: 15_000, label: 'the delivery to succeed' },
    );
    const [limited, retried] = hook.deliveries;
    const gap = (retried?.at ?? 0) - (limited?.answeredAt ?? 0);
    console.log(`429 with Retry-After: 3 answered, retried ${gap} ms later (schedule step: 1000 ms)`);
    expect(gap).toBeGreaterThanOrEqual(3000);
    expect(retried?.webhookId).toBe(event.id);
  });

  it('cuts an attempt at the limit when the receiver never answers, and retries it', async () => {
    const a = await account();
    const hook = await receiver();
    hook.answer((_, i) => (i < 2 ? 'hang' : { status: 200 }));
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.created'],
    });
    await createTicket(a);
    const [event] = await allEvents(a);
    if (!event) throw new Error('no event');
    await clock().advanceUntil(
      async () => (await getDelivery(a.accountId, endpoint.id, event.id))?.state === 'succeeded',
      { within: 15_000, label: 'the delivery to succeed' },
    );
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 });
    expect(log.data.map((x) => [x.attempt, x.status, x.error])).toEqual([
      [3, 200, null],
      [2, null, 'timeout'],
      [1, null, 'timeout'],
    ]);
    for (const cut of log.data.slice(1)) {
      expect(cut.durationMs).toBeGreaterThanOrEqual(990);
      expect(cut.durationMs).toBeLessThan(1500);
    }
    console.log(`attempts cut at the 1000 ms limit after ${log.data.slice(1).map((x) => x.durationMs)} ms`);
  });

  it('reads at most ~64 KB of a huge answer, and cuts an endless one at the limit; both are answers (2xx: succeeded)', async () => {
    const a = await account();
    const hook = await receiver();
    hook.answer((_, i) =>
      i === 0 ? { status: 200, bodyBytes: 50 * 1024 * 1024 } : { status: 200, trickle: true },
    );
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.created'],
    });
    await createTicket(a);
    await clock().advanceUntil(() => hook.deliveries.length === 1 && hook.deliveries[0]?.answered, {
      within: 10_000,
      label: 'the first delivery',
    });
    await createTicket(a);
    const events = await allEvents(a);
    await clock().advanceUntil(
      async () => {
        const states = await Promise.all(events.map((e) => getDelivery(a.accountId, endpoint.id, e.id)));
        return states.every((d) => d?.state === 'succeeded');
      },
      { within: 10_000, label: 'both deliveries to succeed' },
    );
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 });
    const [endless, huge] = log.data;
    console.log(
      `a 50 MB answer read for ${huge?.durationMs} ms; an endless one cut after ${endless?.durationMs} ms`,
    );
    expect(huge).toMatchObject({ status: 200, error: null });
    expect(huge?.durationMs).toBeLessThan(500);
    expect(endless).toMatchObject({ status: 200, error: null });
    expect(endless?.durationMs).toBeGreaterThanOrEqual(990);
    expect(endless?.durationMs).toBeLessThan(1500);
  });

  it('redelivers one event again with its webhook-id, attempts numbered on, and every wanted event since a time', async () => {
    const a = await account();
    const hook = await receiver();
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.created'],
    });
    const uuids: string[] = [];
    // A moment of the clock apart: {since} names the second's time, which the first must be before.
    for (let i = 0; i < 3; i++) {
      uuids.push((await createTicket(a)).body.ticket.uuid);
      await clock().advance(10);
    }
    // In creation order: the feed keeps each object's order, not one across three tickets (decisions.md).
    const created = (await allEvents(a)).sort((x, y) => x.created_at.localeCompare(y.created_at));
    await clock().advanceUntil(() => hook.deliveries.length === 3, {
      within: 10_000,
      label: 'the first deliveries',
    });
    const [first, second, third] = created;
    if (!first || !second || !third) throw new Error('three events expected');
    // Changes of an unwanted type (ticket.updated) after the second: not sent by {since}.
    await a.call('PATCH', `/api/tickets/${uuids[2]}`, { priority: 'urgent' });
    const again = await redeliver(a.accountId, endpoint.id, { eventId: first.id });
    expect(again).toEqual({ eventIds: [first.id], more: false });
    await clock().advanceUntil(() => hook.deliveries.length === 4, {
      within: 10_000,
      label: 'the redelivery',
    });
    expect(hook.deliveries[3]).toMatchObject({ webhookId: first.id, verified: true });
    expect(await getDelivery(a.accountId, endpoint.id, first.id)).toMatchObject({
      state: 'succeeded',
      attempts: 2,
    });
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 1 });
    expect(log).toMatchObject({ total: 4, data: [{ eventId: first.id, attempt: 2, status: 204 }] });

    const since = Date.parse(second.created_at);
    const fromSecond = await redeliver(a.accountId, endpoint.id, { since });
    expect({ ...fromSecond, eventIds: [...fromSecond.eventIds].sort() }).toEqual({
      eventIds: [second.id, third.id].sort(),
      more: false,
    });
    await clock().advanceUntil(() => hook.deliveries.length === 6, {
      within: 10_000,
      label: 'the redeliveries since',
    });
    expect(
      hook.deliveries
        .slice(4)
        .map((d) => d.webhookId)
        .sort(),
    ).toEqual([second.id, third.id].sort());
    await expect(
      redeliver(a.accountId, endpoint.id, { eventId: 'evt_00000000000000000000' }),
    ).rejects.toThrow(UnknownEvent);
  });

  it('redelivering a delivery that waits for its retry makes it due now', async () => {
    process.env.WEBHOOK_RETRY_SCHEDULE = '3600';
    const a = await account();
    const hook = await receiver();
    hook.answer((_, i) => ({ status: i === 0 ? 500 : 200 }));
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.created'],
    });
    await createTicket(a);
    const [event] = await allEvents(a);
    if (!event) throw new Error('no event');
    await clock().advanceUntil(
      async () => (await getDelivery(a.accountId, endpoint.id, event.id))?.attempts === 1,
      {
        within: 10_000,
        label: 'the failed first attempt',
      },
    );
    expect((await getDelivery(a.accountId, endpoint.id, event.id))?.nextAt).toBeGreaterThan(
      nowMillis() + 3_500_000,
    );
    expect(await redeliver(a.accountId, endpoint.id, { eventId: event.id })).toEqual({
      eventIds: [event.id],
      more: false,
    });
    await clock().advanceUntil(
      async () => (await getDelivery(a.accountId, endpoint.id, event.id))?.state === 'succeeded',
      { within: 10_000, label: 'the delivery brought forward' },
    );
    expect(hook.deliveries.map((d) => [d.webhookId, d.answered])).toEqual([
      [event.id, 500],
      [event.id, 200],
    ]);
  });

  it('connects only to the address the URL policy checked, keeping the name for the Host header', async () => {
    const hook = await receiver();
    // A name that resolves nowhere: the attempt reaches the receiver only through the pinned address.
    const target = {
      url: new URL(`http://rebind.invalid:${hook.port}/hook`),
      address: '127.0.0.1',
      family: 4 as const,
    };
    const answer = await postWebhook(target, Buffer.from('{}'), { 'content-type': 'application/json' }, 1000);
    expect(answer).toMatchObject({ status: 204, error: null });
    expect(hook.deliveries[0]?.headers.host).toBe(`rebind.invalid:${hook.port}`);
  });

  it('outside the local stage, refuses a receiver on this machine before connecting, and logs the attempt', async () => {
    const a = await account();
    const hook = await receiver();
    const endpoint = await createTestEndpoint(a.accountId, {
      url: hook.url,
      secret: hook.secret,
      events: ['ticket.created'],
    });
    delete process.env[STAGE_VARIABLE];
    try {
      await createTicket(a);
      await clock().advanceUntil(
        async () =>
          (await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 })).total === 1,
        { within: 10_000, label: 'the refused attempt' },
      );
    } finally {
      process.env[STAGE_VARIABLE] = LOCAL_STAGE;
    }
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 });
    expect(log.data[0]).toMatchObject({
      attempt: 1,
      status: null,
      error: expect.stringMatching(/^url_refused: /),
    });
    expect(hook.deliveries).toEqual([]);
  });

  it('signs with both secrets after a rotation over the API: receivers holding either verify the delivery', async () => {
    const a = await account();
    const hook = await receiver();
    const created = await a.call('POST', '/api/webhooks', { url: hook.url, events: ['ticket.created'] });
    const { id, secret: oldSecret } = created.body.data as { id: string; secret: string };
    hook.useSecret(oldSecret);
    const rotated = await a.call('POST', `/api/webhooks/${id}/rotate-secret`);
    const newSecret = (rotated.body.data as { secret: string }).secret;
    expect(newSecret).not.toBe(oldSecret);
    await createTicket(a);
    await clock().advanceUntil(() => hook.deliveries.length === 1, { within: 10_000, label: 'the delivery' });
    const [delivery] = hook.deliveries;
    expect(delivery?.verified).toBe(true);
    expect(String(delivery?.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [oldSecret, newSecret]) {
      expect(() =>
        new Webhook(secret).verify(delivery?.body ?? '', delivery?.headers as Record<string, string>),
      ).not.toThrow();
    }
  });

  it('sends nothing more to an endpoint once its owner disabled it, moved it to another URL or deleted it', async () => {
    const a = await account();
    // Each answer takes 400 ms (4 at once): the events come faster than that, so each endpoint has a backlog and its
    // runner keeps it leased (reading it again only when it renews the lease, every third of the lease).
    const [toDisable, toMove, moved, toDelete] = [
      await receiver(),
      await receiver(),
      await receiver(),
      await receiver(),
    ];
    const register = async (hook: Receiver) => {
      hook.answer(() => ({ status: 200, delayMs: 400 }));
      const created = await a.call('POST', '/api/webhooks', { url: hook.url, events: ['ticket.*'] });
      hook.useSecret(created.body.data.secret);
      return created.body.data.id as string;
    };
    const [disabledId, movedId, deletedId] = [
      await register(toDisable),
      await register(toMove),
      await register(toDelete),
    ];
    moved.useSecret(toMove.secret);
    // Two tickets every 100 ms of the clock (20 a second, each endpoint taking 10) until `done`, at most `ms`.
    const writeUntil = async (done: () => boolean, ms: number, label: string) => {
      const end = nowMillis() + ms;
      while (!done()) {
        if (nowMillis() >= end) throw new Error(`not within ${ms} ms of the clock: ${label}`);
        await Promise.all([createTicket(a), createTicket(a)]);
        await clock().advance(100);
      }
    };
    await writeUntil(
      () => [toDisable, toMove, toDelete].every((h) => h.deliveries.length >= 5),
      15_000,
      'deliveries flowing to the three endpoints',
    );
    // The three changes, each answered at `done`; the changes go on for longer than a lease renewal's period.
    const [disabledAt, movedAt, deletedAt] = await Promise.all([
      a.call('PATCH', `/api/webhooks/${disabledId}`, { enabled: false }).then(() => nowMillis()),
      a.call('PATCH', `/api/webhooks/${movedId}`, { url: moved.url }).then(() => nowMillis()),
      a.call('DELETE', `/api/webhooks/${deletedId}`).then(() => nowMillis()),
    ]);
    const writtenUntil = nowMillis() + 5_000;
    await writeUntil(() => nowMillis() >= writtenUntil, 6_000, 'five seconds of changes');
    await clock().advanceUntil(() => moved.deliveries.length > 0, {
      within: 10_000,
      label: 'a delivery at the new URL',
    });
    // An attempt that read the endpoint before the change landed reaches its receiver within a few ms of its
    // start (of the clock: none, it stands still while the attempt runs): what arrives later than this after the
    // change's answer was sent after it.
    const SLACK_MS = 250;
    const late = (hook: Receiver, at: number) =>
      hook.deliveries.filter((d) => d.at > at + SLACK_MS).map((d) => d.at - at);
    console.log(
      `after the change's answer: ${late(toDisable, disabledAt).length} deliveries to the disabled endpoint, ` +
        `${late(toMove, movedAt).length} to the old URL, ${late(toDelete, deletedAt).length} to the deleted ` +
        `endpoint (ms after: ${[late(toDisable, disabledAt), late(toMove, movedAt), late(toDelete, deletedAt)].map((l) => l.join(' '))}); ` +
        `${moved.deliveries.length} to the new URL, verified: ${moved.deliveries.every((d) => d.verified)}`,
    );
    expect(late(toDisable, disabledAt)).toEqual([]);
    expect(late(toMove, movedAt)).toEqual([]);
    expect(late(toDelete, deletedAt)).toEqual([]);
    expect(moved.deliveries.every((d) => d.verified)).toBe(true);
  }, 90_000);

  it("sends each account only its own events; account A's receiver timing out every attempt does not delay account B's", async () => {
    process.env.WEBHOOK_TIMEOUT_MS = '3000';
    const [a, b] = [await account(), await account()];
    const [hookA, hookB] = [await receiver(), await receiver()];
    hookA.answer(() => 'hang');
    await createTestEndpoint(a.accountId, { url: hookA.url, secret: hookA.secret, events: ['*'] });
    await createTestEndpoint(b.accountId, { url: hookB.url, secret: hookB.secret, events: ['*'] });
    // A's backlog first, so that its endpoint holds its slots with hanging attempts while B's events come.
    await times(40, 8, () => createTicket(a));
    await clock().advanceUntil(() => hookA.deliveries.length >= 4, {
      within: 10_000,
      label: "A's attempts hanging",
    });
    const sentB = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      await createTicket(b);
      await clock().advance(100);
    }
    const eventsB = await allEvents(b);
    // When each of B's events was committed: its created_at.
    for (const e of eventsB) sentB.set(e.id, Date.parse(e.created_at));
    await clock().advanceUntil(() => eventsB.every((e) => hookB.byId().has(e.id)), {
      within: 20_000,
      label: "B's events at B's receiver",
    });
    const eventsA = await allEvents(a);
    const idsA = new Set(eventsA.map((e) => e.id));
    const idsB = new Set(eventsB.map((e) => e.id));
    expect(hookA.deliveries.every((d) => idsA.has(d.webhookId) && d.verified)).toBe(true);
    expect(hookB.deliveries.every((d) => idsB.has(d.webhookId) && d.verified)).toBe(true);

    const latencyB = eventsB
      .map((e) => (hookB.byId().get(e.id)?.[0]?.at ?? 0) - (sentB.get(e.id) ?? 0))
      .sort((x, y) => x - y);
    const firstA = eventsA
      .map((e) => hookA.byId().get(e.id)?.[0]?.at)
      .filter((at): at is number => at !== undefined);
    const p50 = latencyB[Math.floor(latencyB.length / 2)] ?? 0;
    const max = latencyB.at(-1) ?? 0;
    console.log(
      `account A: ${eventsA.length} events, ${hookA.deliveries.length} attempts reached its hanging receiver ` +
        `(each cut at 3000 ms; ${firstA.length} events attempted so far, at most 4 at once); ` +
        `account B: ${eventsB.length} events delivered, latency p50 ${p50} ms, max ${max} ms`,
    );
    // B's deliveries wait for none of A's attempts (each of which takes 3 s).
    expect(max).toBeLessThan(2500);
  }, 60_000);
});
