/**
 * Attempt slots: at most `global` in the runner and `perAccount` for one account; of them, at most `slowGlobal` for
 * endpoints in the slow lane (those whose attempts time out: lib/webhooks/due.ts), whatever their accounts, and
 * `slowPerAccount` for one account's; waiters served in order, each as soon as its own bounds allow.
 */
export class Slots {
  private used = 0;
  private slowUsed = 0;
  private readonly byAccount = new Map<string, number>();
  private readonly slowByAccount = new Map<string, number>();
  private readonly waiting: { accountId: string; slow: boolean; grant: (granted: boolean) => void }[] = [];
  private closed = false;

  constructor(
    private readonly global: number,
    private readonly perAccount: number,
    private readonly slowPerAccount: number = perAccount,
    private readonly slowGlobal: number = global,
  ) {}

  /** Resolves true once a slot is taken for the account (`slow`: for an endpoint in the slow lane); false when stopping. */
  acquire(accountId: string, slow = false): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.free(accountId, slow)) {
      this.take(accountId, slow);
      return Promise.resolve(true);
    }
    return new Promise((grant) => this.waiting.push({ accountId, slow, grant }));
  }

  /** Gives back a slot taken with the same `slow`. */
  release(accountId: string, slow = false): void {
    this.used--;
    decrement(this.byAccount, accountId);
    if (slow) {
      this.slowUsed--;
      decrement(this.slowByAccount, accountId);
    }
    for (let i = 0; i < this.waiting.length; ) {
      const waiter = this.waiting[i];
      if (waiter && this.free(waiter.accountId, waiter.slow)) {
        this.waiting.splice(i, 1);
        this.take(waiter.accountId, waiter.slow);
        waiter.grant(true);
        if (this.used >= this.global) return;
      } else i++;
    }
  }

  /** Slots the account holds now. */
  inUse(accountId: string): number {
    return this.byAccount.get(accountId) ?? 0;
  }

  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter.grant(false);
  }

  private free(accountId: string, slow: boolean): boolean {
    return (
      this.used < this.global &&
      (this.byAccount.get(accountId) ?? 0) < this.perAccount &&
      (!slow ||
        (this.slowUsed < this.slowGlobal && (this.slowByAccount.get(accountId) ?? 0) < this.slowPerAccount))
    );
  }

  private take(accountId: string, slow: boolean): void {
    this.used++;
    this.byAccount.set(accountId, (this.byAccount.get(accountId) ?? 0) + 1);
    if (slow) {
      this.slowUsed++;
      this.slowByAccount.set(accountId, (this.slowByAccount.get(accountId) ?? 0) + 1);
    }
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
