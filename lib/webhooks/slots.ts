/** Attempt slots: at most `global` in the runner and `perAccount` for one account; waiters served in order. */
export class Slots {
  private used = 0;
  private readonly byAccount = new Map<string, number>();
  private readonly waiting: { accountId: string; grant: (granted: boolean) => void }[] = [];
  private closed = false;

  constructor(
    private readonly global: number,
    private readonly perAccount: number,
  ) {}

  /** Resolves true once a slot is taken for the account; false when the runner is stopping. */
  acquire(accountId: string): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.free(accountId)) {
      this.take(accountId);
      return Promise.resolve(true);
    }
    return new Promise((grant) => this.waiting.push({ accountId, grant }));
  }

  release(accountId: string): void {
    this.used--;
    const n = (this.byAccount.get(accountId) ?? 1) - 1;
    if (n === 0) this.byAccount.delete(accountId);
    else this.byAccount.set(accountId, n);
    const i = this.waiting.findIndex((w) => this.free(w.accountId));
    if (i >= 0) {
      const [waiter] = this.waiting.splice(i, 1);
      if (waiter) {
        this.take(waiter.accountId);
        waiter.grant(true);
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter.grant(false);
  }

  private free(accountId: string): boolean {
    return this.used < this.global && (this.byAccount.get(accountId) ?? 0) < this.perAccount;
  }

  private take(accountId: string): void {
    this.used++;
    this.byAccount.set(accountId, (this.byAccount.get(accountId) ?? 0) + 1);
  }
}
