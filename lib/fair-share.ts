/**
 * A batch of background work shared fairly between accounts (issue 40; docs/sla.md and docs/email.md, "Fair
 * shares"): the breach runner, the outbox and the purge read what is due (a window of due entries, earliest first:
 * lib/data/index/due.ts, dueWindow) and serve at most `limit` of it a pass. First come, first served, one account's
 * burst (100,000 tickets breaching in the same minute, a mass mailing) would fill every batch until it was done
 * and delay every other account's work behind it by minutes. Here each account with work in the window takes its
 * turn: the batch is made round-robin across the accounts, one item of each in turn (each account's items in
 * their order, the accounts in the order of their earliest item), so with k accounts due each gets at least
 * floor(limit / k) places of the batch (all it has, when that is fewer), and a burst of one account delays
 * another's work by at most one batch. With more than `limit` accounts due, the accounts whose work is oldest
 * are served first and the rest in the next pass.
 *
 * Pure: no store, no clock. What is left out of the batch stays due and is read again by a later pass.
 */
export function fairShare<T>(items: readonly T[], accountOf: (item: T) => string, limit: number): T[] {
  if (limit <= 0) return [];
  if (items.length <= limit) return [...items];
  const queues = new Map<string, T[]>();
  for (const item of items) {
    const account = accountOf(item);
    const queue = queues.get(account);
    if (queue) queue.push(item);
    else queues.set(account, [item]);
  }
  const rows = [...queues.values()];
  const batch: T[] = [];
  for (let turn = 0; batch.length < limit; turn++) {
    let served = false;
    for (const queue of rows) {
      const item = queue[turn];
      if (item === undefined) continue;
      batch.push(item);
      served = true;
      if (batch.length === limit) break;
    }
    if (!served) break;
  }
  return batch;
}

/**
 * fairShare for work taken one item at a time (the local inbound mail's queue, infra/local/mail-queue.ts): items
 * handed out round-robin across the accounts that have some waiting, each account's in the order they came, so
 * one account's flood of 10,000 mails delays another's one by one mail's turn, not by the flood.
 */
export class FairQueue<T> {
  /** Each account's waiting items; the map's order is the accounts' turn (the next one first). */
  readonly #queues = new Map<string, T[]>();
  #size = 0;

  constructor(private readonly accountOf: (item: T) => string) {}

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    const account = this.accountOf(item);
    const queue = this.#queues.get(account);
    if (queue) queue.push(item);
    else this.#queues.set(account, [item]);
    this.#size++;
  }

  /** The next account's earliest item; that account's turn goes to the back of the line. */
  shift(): T | undefined {
    const next = this.#queues.entries().next();
    if (next.done) return undefined;
    const [account, queue] = next.value;
    this.#queues.delete(account);
    const item = queue.shift() as T;
    if (queue.length > 0) this.#queues.set(account, queue);
    this.#size--;
    return item;
  }
}
