import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { putPlainEntries } from '#lib/data/index/directory.ts';
import { dynamo, getItem } from '#lib/data/store/client.ts';
import { ServiceUnavailable } from '#lib/errors.ts';
import { runInRequestScope } from '#lib/request-scope.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The plain directory entries a write puts beside its event places (lib/data/index/directory.ts, putPlainEntries):
 * writes of one container entering the same new dimension at once put its entry once, not once each (64 writers
 * moving tickets to a new status sent 64 batches of the same entries, and on DynamoDB Local some waited past the
 * store's bounds: docs/capacity.md, "Contention, measured"). A write that waited on another's put puts the entry
 * itself if that put failed, and never waits past its own deadline.
 */

type Batch = { keys: string[]; release: () => void; fail: (error: Error) => void };
const NAME = 'directoryEntriesTestHold';
let batches: Batch[] = [];
/** While set, each BatchWriteItem is held until the test releases or fails it. */
let holding = false;

function hold(): void {
  holding = true;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (!holding || context.commandName !== 'BatchWriteItemCommand') return next(args);
      const input = (args as { input: { RequestItems: Record<string, { PutRequest: { Item: Entry } }[]> } })
        .input;
      const keys = Object.values(input.RequestItems)
        .flat()
        .map((r) => r.PutRequest.Item.sk);
      const outcome = await new Promise<Error | undefined>((resolve) => {
        batches.push({ keys, release: () => resolve(undefined), fail: (error) => resolve(error) });
      });
      if (outcome) throw outcome;
      return next(args);
    },
    { step: 'initialize', name: NAME, priority: 'low' },
  );
}

afterEach(() => {
  holding = false;
  dynamo.middlewareStack.remove(NAME);
  for (const batch of batches) batch.release();
  batches = [];
});

type Entry = { pk: string; sk: string; type: string };
const partition = () => `DIRECTORY_TEST#${randomUUID()}`;
const entry = (pk: string, sk: string): Entry => ({ pk, sk, type: 'index_dimension' });
/** A few turns of the event loop: a put that was to be sent has been (its way to the hold is promise steps). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};
/** Until `n` batches are held (the calls before them answered by the store), at most ~5 s of turns. */
async function heldBatches(n: number): Promise<void> {
  for (let i = 0; i < 5_000 && batches.length < n; i++)
    await new Promise((resolve) => setTimeout(resolve, 1));
  expect(batches).toHaveLength(n);
}
const stored = async (e: Entry) => Boolean(await getItem({ pk: e.pk, sk: e.sk }));

describe('plain directory entries', () => {
  it('an entry another write of the container is putting is waited for, not put again', async () => {
    hold();
    const pk = partition();
    const first = putPlainEntries([entry(pk, 'status#pending'), entry(pk, 'priority#urgent')]);
    await heldBatches(1);
    const second = putPlainEntries([entry(pk, 'status#pending'), entry(pk, 'assignee#7')]);
    await heldBatches(2);
    await settle();
    // The second sent only what no one was putting.
    expect(batches.map((b) => b.keys)).toEqual([['status#pending', 'priority#urgent'], ['assignee#7']]);
    for (const batch of batches) batch.release();
    await Promise.all([first, second]);
    expect(batches).toHaveLength(2);
    for (const sk of ['status#pending', 'priority#urgent', 'assignee#7'])
      expect(await stored(entry(pk, sk))).toBe(true);
  });

  it("a write whose entry another's failed put carried puts it itself, and only that one fails", async () => {
    hold();
    const pk = partition();
    const first = putPlainEntries([entry(pk, 'status#pending')]);
    await heldBatches(1);
    const second = putPlainEntries([entry(pk, 'status#pending')]);
    await settle();
    expect(batches).toHaveLength(1);
    batches[0]?.fail(Object.assign(new Error('lost'), { name: 'TimeoutError' }));
    await expect(first).rejects.toThrow();
    await heldBatches(2);
    expect(batches.map((b) => b.keys)).toEqual([['status#pending'], ['status#pending']]);
    batches[1]?.release();
    await second;
    expect(await stored(entry(pk, 'status#pending'))).toBe(true);
  });

  it('a waiting write answers 503 at its own deadline, whatever the put it waits on does', async () => {
    hold();
    const pk = partition();
    const first = putPlainEntries([entry(pk, 'status#closed')]);
    await heldBatches(1);
    // A deadline 1 ms away: the wait is bounded by a timer (as a store call's attempt is), so no test time passes.
    const second = runInRequestScope({ deadline: nowMillis() + 1 }, () =>
      putPlainEntries([entry(pk, 'status#closed')]),
    );
    // While the put it waits on is still held: it did not wait for it, nor send its own.
    await expect(second).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(batches).toHaveLength(1);
    batches[0]?.release();
    await first;
    expect(await stored(entry(pk, 'status#closed'))).toBe(true);
  });
});
