import { afterEach, describe, expect, it } from 'vitest';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { webhookKeys } from '#lib/data/keys.ts';
import { getItem } from '#lib/data/store/client.ts';
import { duePending, getDelivery } from '#lib/data/webhook-deliveries.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { lambdaContext } from '#test/support/events.ts';
import { type FaultMode, sweepPositions, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { inserted, storedEventItem, streamBatch } from '#test/support/stream-records.ts';
import { createTestEndpoint, removeFromDueIndex } from '#test/support/webhooks.ts';

/**
 * The fan-out runs an account's endpoints (and accounts) in parallel, within a bound (lib/webhooks/fan-out.ts): every
 * endpoint still gets every event it wants exactly once, and is in the due index, whatever call of the batch fails
 * (a lost request, a lost answer, a conflict) and however often the batch's failed records are handed over again.
 */
const gateway = useGateway();

/**
 * The endpoints made here are never delivered to (no runner in this file): their due entries are taken out after each
 * test, or they would stay the earliest of the file's table's due index for a later test's runner.
 */
const made: { accountId: string; endpointId: string }[] = [];
afterEach(async () => {
  for (const { accountId, endpointId } of made.splice(0)) await removeFromDueIndex(accountId, endpointId);
});

/** An account with three endpoints (two on `*`, one on ticket.updated only) and 3 ticket creates + 1 update. */
async function setUp() {
  const account = await createTestAccount();
  const url = 'http://127.0.0.1:9/hook';
  const endpoints = [
    await createTestEndpoint(account.accountId, { url, secret: 'whsec_x', events: ['*'] }),
    await createTestEndpoint(account.accountId, { url, secret: 'whsec_x', events: ['*'] }),
    await createTestEndpoint(account.accountId, { url, secret: 'whsec_x', events: ['ticket.updated'] }),
  ];
  for (const e of endpoints) made.push({ accountId: account.accountId, endpointId: e.id });
  let uuid = '';
  for (let i = 0; i < 3; i++) {
    const created = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { subject: `Printer ${i}`, description: 'Smoke.', requester_email: 'ann@client.test' },
    });
    expect(created.status).toBe(201);
    uuid = created.body.ticket.uuid;
  }
  const updated = await gateway.call('PATCH', `/api/tickets/${uuid}`, {
    key: account.apiKey,
    body: { priority: 'high' },
  });
  expect(updated.status).toBe(200);
  const feed = await gateway.call('GET', '/api/events?limit=100', { key: account.apiKey });
  const events = feed.body.data as { id: string; type: string }[];
  expect(events.map((e) => e.type).sort()).toEqual([
    'ticket.created',
    'ticket.created',
    'ticket.created',
    'ticket.updated',
  ]);
  const records = await Promise.all(
    events.map(async (e, i) => inserted(await storedEventItem(account.accountId, e.id), String(1000 + i))),
  );
  return { account, endpoints, events, records };
}

type SetUp = Awaited<ReturnType<typeof setUp>>;

/** Every endpoint has a delivery of each event it wants, one pending item each, and its due entry. */
async function expectEachOnce({ account, endpoints, events }: SetUp) {
  for (const endpoint of endpoints) {
    const wanted = events.filter((e) => endpoint.events.includes('*') || endpoint.events.includes(e.type));
    const pending = await duePending(account.accountId, endpoint.id, Date.now() + 60_000, 100);
    expect(pending.map((p) => p.eventId).sort()).toEqual(wanted.map((e) => e.id).sort());
    for (const e of wanted) {
      expect(await getDelivery(account.accountId, endpoint.id, e.id)).toMatchObject({ state: 'pending' });
    }
    const item = await getItem(webhookKeys.endpoint(account.accountId, endpoint.id));
    expect(item?.gsi2sk, 'the endpoint is in the due index').toEqual(expect.any(String));
  }
}

describe('parallel fan-out', () => {
  it('fans a batch out to every endpoint once: 2 × 4 + 1 deliveries, nothing more when handed over again', async () => {
    const setup = await setUp();
    const batch = streamBatch(...setup.records);
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    await expectEachOnce(setup);
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    await expectEachOnce(setup);
  });

  it('under a fault at every call of the batch: the failed records handed over again, every event reaches every endpoint once', async () => {
    // How many store calls a clean fan-out of such a batch makes.
    const clean = await setUp();
    const { operations } = await withFault(undefined, () =>
      streamHandler(streamBatch(...clean.records), lambdaContext),
    );
    expect(operations.length).toBeGreaterThan(10);
    const modes: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
    // Each call in turn, the three ways a call fails taken in turn too (as test/system/sweeps/trash-faults.test.ts: every
    // way on every call tripled the time and the matrix lives in test/system/sweeps/faults-update.test.ts). A few
    // positions at once, each on an account of its own.
    const positions = Array.from({ length: operations.length }, (_, i) => i + 1);
    await sweepPositions(positions, async (at) => {
      for (const mode of [modes[(at - 1) % modes.length] as FaultMode]) {
        const setup = await setUp();
        let batch = streamBatch(...setup.records);
        const first = await withFault({ at, mode }, () => streamHandler(batch, lambdaContext));
        // Lambda hands the batch over again from its first failed record (bisecting aside): here, the failed ones.
        let failures = first.result.batchItemFailures.map((f) => f.itemIdentifier);
        for (let round = 0; failures.length > 0; round++) {
          expect(round, `${mode} at ${at}: still failing`).toBeLessThan(3);
          batch = streamBatch(
            ...setup.records.filter((r) => failures.includes(r.dynamodb?.SequenceNumber ?? '')),
          );
          failures = (await streamHandler(batch, lambdaContext)).batchItemFailures.map(
            (f) => f.itemIdentifier,
          );
        }
        await expectEachOnce(setup);
      }
    });
  }, 240_000);
});
