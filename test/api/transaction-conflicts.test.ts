import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { dynamo, getItem, tableName } from '#lib/data/store/client.ts';
import { transact } from '#lib/data/store/transact.ts';
import { cancelConflictingTransactions } from '#test/support/transaction-conflicts.ts';

/** The wrapper the capacity measurements rely on: DynamoDB's conflicts, which DynamoDB Local never raises. */
const key = (name: string) => ({ pk: `CONFLICT-TEST#${randomUUID()}`, sk: name });
const increment = (k: Record<string, string>) => ({
  Update: {
    TableName: tableName(),
    Key: k,
    UpdateExpression: 'ADD n :one',
    ExpressionAttributeValues: { ':one': 1 },
  },
});

let uninstall: (() => void) | undefined;
afterEach(() => {
  uninstall?.();
  uninstall = undefined;
});

describe('cancelConflictingTransactions (test/support/transaction-conflicts.ts)', () => {
  it('without it, DynamoDB Local makes two transactions on one item wait for each other: both land', async () => {
    const hot = key('hot');
    await Promise.all([transact([increment(hot)]), transact([increment(hot)])]);
    expect((await getItem(hot))?.n).toBe(2);
  });

  it('cancels a transaction that touches an item another one in flight holds, naming the contested action', async () => {
    const wrapper = cancelConflictingTransactions();
    uninstall = wrapper.uninstall;
    const hot = key('hot');
    const cold = key('cold');
    const [first, second] = await Promise.allSettled([
      transact([increment(hot)]),
      transact([increment(cold), increment(hot)]),
    ]);
    expect(first.status).toBe('fulfilled');
    expect(second.status).toBe('rejected');
    const error = (second as PromiseRejectedResult).reason as {
      name: string;
      CancellationReasons: { Code: string }[];
    };
    expect(error.name).toBe('TransactionCanceledException');
    expect(error.CancellationReasons.map((r) => r.Code)).toEqual(['None', 'TransactionConflict']);
    // Cancelled whole: neither of its items changed.
    expect((await getItem(hot))?.n).toBe(1);
    expect(await getItem(cold)).toBeUndefined();
    expect(wrapper.counts).toMatchObject({ transactions: 2, cancelled: 1, writesRefused: 0 });
    // The item the conflict was on, named as the store holds it.
    expect([...wrapper.counts.contested.values()]).toEqual([1]);
    expect([...wrapper.counts.contested.keys()][0]).toContain(hot.pk);
  });

  it('refuses a single-item write to an item a transaction in flight holds, and lets it through once that ends', async () => {
    const wrapper = cancelConflictingTransactions();
    uninstall = wrapper.uninstall;
    const hot = key('hot');
    const plain = () =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: hot,
          UpdateExpression: 'ADD n :one',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
    const [held, refused] = await Promise.allSettled([transact([increment(hot)]), plain()]);
    expect(held.status).toBe('fulfilled');
    expect((refused as PromiseRejectedResult).reason?.name).toBe('TransactionConflictException');
    await plain();
    expect((await getItem(hot))?.n).toBe(2);
    expect(wrapper.counts).toMatchObject({ transactions: 1, cancelled: 0, writesRefused: 1 });
    expect([...wrapper.counts.contested.values()]).toEqual([1]);
  });

  it('is gone once uninstalled', async () => {
    cancelConflictingTransactions().uninstall();
    const hot = key('hot');
    await Promise.all([transact([increment(hot)]), transact([increment(hot)])]);
    expect((await getItem(hot))?.n).toBe(2);
  });
});
