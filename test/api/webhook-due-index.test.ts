import { describe, expect, it } from 'vitest';
import { webhookDeliveryKeys, webhookKeys } from '#lib/data/keys.ts';
import { dynamo, getItem } from '#lib/data/store/client.ts';
import { markDue } from '#lib/data/webhook-deliveries/queue.ts';
import {
  addDeliveries,
  claimDelivery,
  dueEndpoints,
  duePending,
  leaseEndpoint,
  releaseEndpoint,
} from '#lib/data/webhook-deliveries.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { createTestEndpoint, removeFromDueIndex } from '#test/support/webhooks.ts';

/**
 * The due index's invariant (docs/webhooks.md, "The due entry, leases and claims"): an endpoint with a pending
 * delivery has a due entry no later than that delivery's due, whatever order the fan-out and a lease holder's
 * release run in; and one runner at a time holds an endpoint, one attempt at a time holds a delivery.
 */
async function setUp() {
  const account = await createTestAccount();
  const endpoint = await createTestEndpoint(account.accountId, {
    url: 'https://receiver.example/hook',
    secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
    events: ['*'],
  });
  const entry = async () => {
    const item = await getItem(webhookKeys.endpoint(account.accountId, endpoint.id));
    return item?.gsi2sk === undefined ? undefined : webhookDeliveryKeys.parseDue(String(item.gsi2sk)).dueAt;
  };
  return { accountId: account.accountId, endpointId: endpoint.id, entry };
}

const event = (n: number) => ({ id: `evt_${String(n).padStart(10, '0')}0123456789`, type: 'ticket.created' });

/**
 * Runs `between` once, right after the first call of the shared client that `matches` answered: a write of
 * another process landing between a reader's read and its write.
 */
function interleave(matches: (input: Record<string, unknown>) => boolean, between: () => Promise<unknown>) {
  let done = false;
  const name = `interleave-${Math.random()}`;
  dynamo.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      if (!done && matches(args.input as Record<string, unknown>)) {
        done = true;
        await between();
      }
      return result;
    },
    { step: 'initialize', name },
  );
  return () => dynamo.middlewareStack.remove(name);
}

describe('the due index', () => {
  it('a delivery added while the holder releases is never dropped from the due index', async () => {
    const { accountId, endpointId, entry } = await setUp();
    const partition = webhookDeliveryKeys.pendingPartition(accountId, endpointId);
    await addDeliveries(accountId, endpointId, [event(1)]);
    const leased = await leaseEndpoint(accountId, endpointId, 'runner-a', 30_000);
    expect(leased).toBeDefined();
    // The holder attempted event 1 (its pending item gone), then releases: between its read of the pending items
    // (none) and its write, the fan-out adds event 2.
    const [pending] = await duePending(accountId, endpointId, Date.now(), 10);
    if (!pending) throw new Error('no pending delivery');
    await dynamo.send(
      new (await import('@aws-sdk/lib-dynamodb')).DeleteCommand({
        TableName: process.env.TABLE_NAME,
        Key: webhookDeliveryKeys.pending(accountId, endpointId, pending.dueAt, pending.eventId),
      }),
    );
    let added = 0;
    const restore = interleave(
      (input) =>
        (input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[':pk'] === partition &&
        input.ProjectionExpression === 'sk',
      async () => {
        added = await addDeliveries(accountId, endpointId, [event(2)]);
      },
    );
    try {
      await releaseEndpoint(accountId, endpointId, 'runner-a');
    } finally {
      restore();
    }
    expect(added).toBe(1);
    const due = await entry();
    expect(due).toBeDefined();
    expect(due).toBeLessThanOrEqual(Date.now());
    expect((await dueEndpoints(Date.now(), 1000)).some((e) => e.endpointId === endpointId)).toBe(true);
  });

  it('a new delivery sets the due entry when no lease holds the endpoint and leaves it at the lease end while one does; the release puts back the earliest due', async () => {
    const { accountId, endpointId, entry } = await setUp();
    await addDeliveries(accountId, endpointId, [event(1)]);
    const first = await entry();
    expect(first).toBeLessThanOrEqual(Date.now());
    const leased = await leaseEndpoint(accountId, endpointId, 'runner-a', 60_000);
    expect(leased?.leaseUntil).toBeGreaterThan(Date.now() + 50_000);
    expect(await entry()).toBe(leased?.leaseUntil);
    // Leased: the holder finds the new delivery itself; the entry stays at the lease's end.
    await addDeliveries(accountId, endpointId, [event(2)]);
    expect(await entry()).toBe(leased?.leaseUntil);
    await releaseEndpoint(accountId, endpointId, 'runner-a');
    expect(await entry()).toBe(first);
  });

  it('one runner holds an endpoint, one claim holds a delivery, and the same event fanned out again creates nothing', async () => {
    const { accountId, endpointId } = await setUp();
    await addDeliveries(accountId, endpointId, [event(1)]);
    const [a, b] = await Promise.all([
      leaseEndpoint(accountId, endpointId, 'runner-a', 30_000),
      leaseEndpoint(accountId, endpointId, 'runner-b', 30_000),
    ]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    const [pending] = await duePending(accountId, endpointId, Date.now(), 10);
    if (!pending) throw new Error('no pending delivery');
    const claims = await Promise.all(
      ['runner-a', 'runner-b', 'runner-c'].map((owner) =>
        claimDelivery(accountId, endpointId, pending, owner, 30_000),
      ),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    // A fan-out of the same event again (a stream record handed over twice) creates nothing.
    expect(await addDeliveries(accountId, endpointId, [event(1)])).toBe(0);
  });
});

/**
 * The due index over its partitions (lib/data/webhooks/due-shards.ts): one read of every partition answers the earliest
 * entries of all of them, in due order. The entries here are due at the epoch's first seconds, so they are the
 * earliest of the file's table; they are removed after.
 */
describe('the due index over its shards', () => {
  it('endpoints due in different partitions come back from one read, earliest first, at most the limit', async () => {
    const account = await createTestAccount();
    const endpoints = await Promise.all(
      Array.from({ length: 12 }, () =>
        createTestEndpoint(account.accountId, {
          url: 'https://receiver.example/hook',
          secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
          events: ['*'],
        }),
      ),
    );
    try {
      // Due at 1,001 … 1,012 ms after the epoch, in reverse order of creation.
      await Promise.all(endpoints.map((e, i) => markDue(account.accountId, e.id, 1_012 - i)));
      const partitions = new Set(
        endpoints.map((e) => webhookDeliveryKeys.due(account.accountId, e.id, 0).gsi2pk),
      );
      expect(partitions.size).toBeGreaterThan(1);
      for (const e of endpoints) {
        const item = await getItem(webhookKeys.endpoint(account.accountId, e.id));
        expect(item?.gsi2pk).toBe(webhookDeliveryKeys.due(account.accountId, e.id, 0).gsi2pk);
        expect(item?.gsi1pk).toBeUndefined();
      }
      const earliest = await dueEndpoints(Date.now(), 5);
      expect(earliest).toEqual(
        endpoints
          .slice(-5)
          .reverse()
          .map((e, i) => ({ accountId: account.accountId, endpointId: e.id, dueAt: 1_001 + i })),
      );
    } finally {
      await Promise.all(endpoints.map((e) => removeFromDueIndex(account.accountId, e.id)));
    }
  });
});
