import { describe, expect, it } from 'vitest';
import { FairQueue, fairShare } from '#lib/fair-share.ts';

/** lib/fair-share.ts: a batch of due work shared round-robin between the accounts due (issue 40). */
const item = (account: string, n: number) => ({ account, n });
const of = (x: { account: string }) => x.account;
const names = (batch: { account: string; n: number }[]) => batch.map((x) => `${x.account}${x.n}`);

describe('fairShare', () => {
  it('takes everything, in its order, when it fits the batch', () => {
    const items = [item('a', 1), item('b', 1), item('a', 2)];
    expect(fairShare(items, of, 3)).toEqual(items);
    expect(fairShare(items, of, 0)).toEqual([]);
  });

  it("gives another account its place in the first batch, however many of one account's come first", () => {
    const items = [...Array.from({ length: 10_000 }, (_, n) => item('a', n)), item('b', 0)];
    const batch = fairShare(items, of, 100);
    expect(batch).toHaveLength(100);
    expect(names(batch).slice(0, 3)).toEqual(['a0', 'b0', 'a1']);
    expect(batch.filter((x) => x.account === 'a').map((x) => x.n)).toEqual(
      Array.from({ length: 99 }, (_, n) => n),
    );
  });

  it('round-robin: each account due at least limit / accounts, accounts in the order of their earliest item', () => {
    const items = [
      ...Array.from({ length: 50 }, (_, n) => item('c', n)),
      ...Array.from({ length: 50 }, (_, n) => item('a', n)),
      item('b', 0),
      item('b', 1),
    ];
    const batch = fairShare(items, of, 9);
    expect(names(batch)).toEqual(['c0', 'a0', 'b0', 'c1', 'a1', 'b1', 'c2', 'a2', 'c3']);
  });

  it('with more accounts due than places, the accounts whose work is oldest', () => {
    const items = ['d', 'c', 'b', 'a'].flatMap((account) => [item(account, 0), item(account, 1)]);
    expect(names(fairShare(items, of, 3))).toEqual(['d0', 'c0', 'b0']);
  });
});

describe('FairQueue', () => {
  it("hands out one account's flood and another's one round-robin: the other's next, not after the flood", () => {
    const queue = new FairQueue<{ account: string; n: number }>(of);
    for (let n = 0; n < 10_000; n++) queue.push(item('a', n));
    expect(names([queue.shift(), queue.shift()] as { account: string; n: number }[])).toEqual(['a0', 'a1']);
    queue.push(item('b', 0));
    queue.push(item('c', 0));
    queue.push(item('b', 1));
    const taken = Array.from({ length: 6 }, () => queue.shift()) as { account: string; n: number }[];
    expect(names(taken)).toEqual(['a2', 'b0', 'c0', 'a3', 'b1', 'a4']);
    expect(queue.size).toBe(10_000 - 5);
    while (queue.size > 0) queue.shift();
    expect(queue.shift()).toBeUndefined();
  });
});
