import { describe, expect, it } from 'vitest';
import { webhookKeys } from '#lib/data/keys/webhooks.ts';
import { dynamo, getItem } from '#lib/data/store/client.ts';
import { markOutcome } from '#lib/data/webhook-deliveries/marks.ts';
import {
  addDeliveries,
  attemptTotal,
  claimDelivery,
  duePending,
  getDelivery,
  LOG_LANES,
  listDeliveryAttempts,
  recordAttempt,
  TRIM_BATCH,
  trimAttempts,
} from '#lib/data/webhook-deliveries.ts';
import { ENDPOINT_ATTR } from '#lib/data/webhooks/webhooks.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { createTestEndpoint, removeFromDueIndex } from '#test/support/webhooks.ts';

/**
 * The deliveries log without a number shared by the endpoint's records (docs/webhooks.md, "Items"; issue 40): one
 * endpoint's records land concurrently, each counted once on its lane, the total exact, pages newest first; the trim
 * keeps the newest and counts off what it drops, also when two trims run at once.
 */
const event = (n: number) => ({ id: `evt_${String(n).padStart(10, '0')}0123456789`, type: 'ticket.created' });

async function endpointWithClaimed(count: number) {
  const account = await createTestAccount();
  const endpoint = await createTestEndpoint(account.accountId, {
    url: 'https://receiver.example/hook',
    secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
    events: ['*'],
  });
  const { accountId } = account;
  await addDeliveries(
    accountId,
    endpoint.id,
    Array.from({ length: count }, (_, i) => event(i + 1)),
  );
  await removeFromDueIndex(accountId, endpoint.id);
  const pending = await duePending(accountId, endpoint.id, Date.now() + 1000, count);
  const claimed = await Promise.all(
    pending.map(async (p) => ({
      pending: p,
      delivery: await claimDelivery(accountId, endpoint.id, p, 'runner-t', 60_000),
    })),
  );
  return { accountId, endpointId: endpoint.id, claimed };
}

describe('the deliveries log', () => {
  it("takes one endpoint's 48 records at once, each on its lane: all land, counted once, newest first", async () => {
    const { accountId, endpointId, claimed } = await endpointWithClaimed(48);
    const start = Date.now();
    await Promise.all(
      claimed.map(({ pending, delivery }, i) => {
        if (!delivery) throw new Error('not claimed');
        return recordAttempt({
          accountId,
          endpointId,
          owner: 'runner-t',
          delivery,
          dueAt: pending.dueAt,
          attempt: { at: start + i, status: 204, error: null, durationMs: 200 },
          next: { state: 'succeeded' },
          lane: i % LOG_LANES,
        });
      }),
    );
    expect(await attemptTotal(accountId, endpointId)).toBe(48);
    const page1 = await listDeliveryAttempts(accountId, endpointId, { page: 1, perPage: 20 });
    const page3 = await listDeliveryAttempts(accountId, endpointId, { page: 3, perPage: 20 });
    expect(page1.total).toBe(48);
    expect(page1.data.map((a) => a.at)).toEqual(Array.from({ length: 20 }, (_, i) => start + 47 - i));
    expect(page3.data.map((a) => a.at)).toEqual(Array.from({ length: 8 }, (_, i) => start + 7 - i));
    expect(await listDeliveryAttempts(accountId, endpointId, { page: 4, perPage: 20 })).toEqual({
      data: [],
      total: 48,
    });
    for (const { pending } of claimed.slice(0, 5))
      expect(await getDelivery(accountId, endpointId, pending.eventId)).toMatchObject({
        state: 'succeeded',
        attempts: 1,
      });
  });

  it('trims to the newest kept once a batch more is there, counted off exactly, also with two trims at once', async () => {
    const kept = 30;
    const { accountId, endpointId, count, start } = await loggedPastTrim(kept);
    expect(await attemptTotal(accountId, endpointId)).toBe(count);
    const dropped = await Promise.all([
      trimAttempts(accountId, endpointId, kept),
      trimAttempts(accountId, endpointId, kept),
    ]);
    expect(dropped[0] + dropped[1]).toBe(count - kept);
    expect(await attemptTotal(accountId, endpointId)).toBe(kept);
    const log = await listDeliveryAttempts(accountId, endpointId, { page: 1, perPage: 100 });
    expect(log.total).toBe(kept);
    expect(log.data.map((a) => a.at)).toEqual(Array.from({ length: kept }, (_, i) => start + count - 1 - i));
    // Under a batch over the bound: nothing to trim yet.
    expect(await trimAttempts(accountId, endpointId, kept - TRIM_BATCH + 1)).toBe(0);
  });
});

/** Records one failed attempt of each claimed delivery, 32 at once, started 1 ms apart from `start`. */
async function recordAll(
  accountId: string,
  endpointId: string,
  claimed: Awaited<ReturnType<typeof endpointWithClaimed>>['claimed'],
  start: number,
) {
  for (let from = 0; from < claimed.length; from += 32) {
    await Promise.all(
      claimed.slice(from, from + 32).map(({ pending, delivery }, i) =>
        recordAttempt({
          accountId,
          endpointId,
          owner: 'runner-t',
          delivery: delivery ?? (undefined as never),
          dueAt: pending.dueAt,
          attempt: { at: start + from + i, status: 500, error: null, durationMs: 10 },
          next: { state: 'failed' },
          lane: i,
        }),
      ),
    );
  }
}

/** An endpoint whose log holds a trim's batch and 20 more past `kept`: one failed attempt each, 1 ms apart. */
async function loggedPastTrim(kept: number) {
  const count = kept + TRIM_BATCH + 20;
  const { accountId, endpointId, claimed } = await endpointWithClaimed(count);
  const start = Date.now();
  await recordAll(accountId, endpointId, claimed, start);
  return { accountId, endpointId, count, start };
}

describe('two trims at once', () => {
  it('a trim that counted before the other dropped its batch drops none of the newest kept (seen at load ~25)', async () => {
    const kept = 30;
    const { accountId, endpointId, count, start } = await loggedPastTrim(kept);
    // The second trim reads the log's oldest keys only once the first has committed its batch: it counted the
    // total before that commit (150, so 120 over) and finds the next oldest after it.
    let firstCommitted!: () => void;
    const committed = new Promise<void>((resolve) => {
      firstCommitted = resolve;
    });
    let oldestReads = 0;
    const NAME = 'trimRace';
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as {
          KeyConditionExpression?: string;
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        const isOldest =
          context.commandName === 'QueryCommand' &&
          String(input.ExpressionAttributeValues?.[':pk'] ?? '').startsWith('WEBHOOK_ATTEMPTS#');
        if (isOldest && ++oldestReads === 2) await committed;
        const result = await next(args);
        if (context.commandName === 'TransactWriteItemsCommand') firstCommitted();
        return result;
      },
      { step: 'initialize', name: NAME },
    );
    try {
      const dropped = await Promise.all([
        trimAttempts(accountId, endpointId, kept),
        trimAttempts(accountId, endpointId, kept),
      ]);
      expect(dropped[0] + dropped[1]).toBe(count - kept);
    } finally {
      dynamo.middlewareStack.remove(NAME);
    }
    expect(await attemptTotal(accountId, endpointId)).toBe(kept);
    const log = await listDeliveryAttempts(accountId, endpointId, { page: 1, perPage: 100 });
    expect(log.data.map((a) => a.at)).toEqual(Array.from({ length: kept }, (_, i) => start + count - 1 - i));
  });
});

describe("the endpoint's marks", () => {
  it('an earlier-started success does not end a failing spell a later-started attempt began (review of #40)', async () => {
    const account = await createTestAccount();
    const endpoint = await createTestEndpoint(account.accountId, {
      url: 'https://receiver.example/hook',
      secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
      events: ['*'],
    });
    const key = webhookKeys.endpoint(account.accountId, endpoint.id);
    const t1 = Date.now();
    // Attempt B started at t1 + 10 and failed fast; attempt A, started at t1, succeeds after it.
    expect(await markOutcome(account.accountId, endpoint.id, { kind: 'failure' }, t1 + 10)).toBe(true);
    expect(await markOutcome(account.accountId, endpoint.id, { kind: 'success' }, t1)).toBe(false);
    expect(await getItem(key)).toMatchObject({ [ENDPOINT_ATTR.failingSince]: t1 + 10 });
    // A success started after the failure ends it.
    expect(await markOutcome(account.accountId, endpoint.id, { kind: 'success' }, t1 + 20)).toBe(true);
    expect((await getItem(key))?.[ENDPOINT_ATTR.failingSince]).toBeNull();
  });
});
