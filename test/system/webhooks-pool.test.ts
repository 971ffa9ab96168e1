import { afterEach, describe, expect, it } from 'vitest';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { listDeliveryAttempts } from '#lib/data/webhook-deliveries.ts';
import { openPools, postWebhook } from '#lib/webhooks/deliver.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { createTestEndpoint, type Receiver, startReceiver, useDispatcher } from '#test/support/webhooks.ts';

/**
 * Keep-alive connections per origin (lib/webhooks/post.ts; docs/webhooks.md, "Connections"): a receiver sees fewer
 * connections than deliveries, and pooling never lets a delivery past the URL policy: the pool is keyed by the address
 * the policy checked for that attempt, and the policy runs before every attempt. The service's clock is the file's
 * manual clock (the dispatcher looks again, and attempts are cut, as the tests advance it).
 */
process.env.WEBHOOK_RETRY_SCHEDULE = '1,1,1,1,1';
process.env.WEBHOOK_TIMEOUT_MS = '1000';

const clock = useManualClock({ wholeFile: true });
const gateway = useGateway();
useDispatcher();

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  process.env[STAGE_VARIABLE] = LOCAL_STAGE;
});

async function receiver(options: Parameters<typeof startReceiver>[0] = {}) {
  const started = await startReceiver(options);
  receivers.push(started);
  return started;
}

const post = (address: string, port: number, timeoutMs = 1000) =>
  postWebhook(
    { url: new URL(`http://rebind.invalid:${port}/hook`), address, family: 4 },
    Buffer.from('{}'),
    { 'content-type': 'application/json' },
    timeoutMs,
  );

async function accountWithEndpoint(hook: Receiver) {
  const a = await createTestAccount();
  const endpoint = await createTestEndpoint(a.accountId, {
    url: hook.url,
    secret: hook.secret,
    events: ['ticket.created'],
  });
  const createTicket = async (n: number) => {
    const answer = await gateway.call('POST', '/api/tickets', {
      key: a.apiKey,
      body: { subject: `Printer ${n}`, description: 'Smoke.', requester_email: 'ann@client.test' },
    });
    expect(answer.status).toBe(201);
  };
  return { a, endpoint, createTicket };
}

describe('webhook connections', () => {
  it('reuses connections: 40 POSTs to one origin, 8 at once, open at most 8', async () => {
    const hook = await receiver();
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(Array.from({ length: 8 }, () => post('127.0.0.1', hook.port)));
      for (const answer of answers) expect(answer).toMatchObject({ status: 204, error: null });
    }
    expect(hook.deliveries).toHaveLength(40);
    expect(hook.connections).toBeGreaterThan(0);
    expect(hook.connections).toBeLessThanOrEqual(8);
  });

  // Each step of the clock settles the dispatcher's store calls in real time: ~12 s alone, over 30 s on a loaded
  // tier run (a fresh-clone run timed out at 30 s with the creates six at a time).
  it('through the dispatcher: every event delivered once, over fewer connections than deliveries', {
    timeout: 90_000,
  }, async () => {
    const hook = await receiver();
    const { createTicket } = await accountWithEndpoint(hook);
    // Six creates at a time: thirty one after another are ~210 store round trips end to end, which on a loaded
    // store were most of the test's 30 s (16 s of 24 s with every store answer 30-150 ms late, against 3.6 s).
    for (let i = 0; i < 30; i += 6) await Promise.all([0, 1, 2, 3, 4, 5].map((j) => createTicket(i + j)));
    await clock().advanceUntil(() => hook.byId().size === 30, { within: 60_000, label: '30 deliveries' });
    expect(hook.deliveries.every((d) => d.verified && d.answered === 204)).toBe(true);
    expect(hook.connections).toBeLessThan(hook.deliveries.length);
  });

  it('keys the pool by the checked address: a name that re-resolves elsewhere never gets the old connection', async () => {
    const hook = await receiver({ host: '0.0.0.0' });
    expect(await post('127.0.0.1', hook.port)).toMatchObject({ status: 204 });
    expect(await post('127.0.0.1', hook.port)).toMatchObject({ status: 204 });
    // The same URL, checked again, now answers another address: a connection of its own, to that address.
    expect(await post('127.0.0.2', hook.port)).toMatchObject({ status: 204 });
    expect(await post('127.0.0.1', hook.port)).toMatchObject({ status: 204 });
    expect(hook.deliveries.map((d) => [d.localAddress, d.connection])).toEqual([
      ['127.0.0.1', 1],
      ['127.0.0.1', 1],
      ['127.0.0.2', 2],
      ['127.0.0.1', 1],
    ]);
  });

  it('does not pool a connection whose answer was cut: the next POST opens a new one', async () => {
    const hook = await receiver();
    hook.answer((_d, i) => (i === 0 ? 'hang' : { status: 204 }));
    const cut = post('127.0.0.1', hook.port, 300);
    await clock().advance(300);
    expect(await cut).toMatchObject({ status: null, error: 'timeout' });
    expect(await post('127.0.0.1', hook.port)).toMatchObject({ status: 204 });
    expect(hook.deliveries.map((d) => d.connection)).toEqual([1, 2]);
  });

  it('checks the URL before every attempt with a pooled connection open: a refused one sends nothing', async () => {
    const hook = await receiver();
    const { a, endpoint, createTicket } = await accountWithEndpoint(hook);
    await createTicket(1);
    await clock().advanceUntil(() => hook.deliveries.length === 1, {
      within: 10_000,
      label: 'the first delivery',
    });
    expect(openPools()).toBeGreaterThan(0);
    // Outside the local stage a receiver on this machine is refused: the pooled connection to it is not used.
    delete process.env[STAGE_VARIABLE];
    await createTicket(2);
    await clock().advanceUntil(
      async () =>
        (await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 })).total === 2,
      { within: 10_000, label: 'the refused attempt' },
    );
    const log = await listDeliveryAttempts(a.accountId, endpoint.id, { page: 1, perPage: 10 });
    expect(log.data[0]).toMatchObject({
      attempt: 1,
      status: null,
      error: expect.stringMatching(/^url_refused: /),
    });
    // No request over the pooled connection within 300 ms of the clock.
    await clock().advance(300);
    expect(hook.deliveries).toHaveLength(1);
  });
});
