import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import { type MailStore, type ReceivedMail, receiveMail } from '#lib/email/receive.ts';
import { FairQueue } from '#lib/fair-share.ts';
import { sleep } from '#lib/time.ts';

/**
 * The local inbound mail's processing queue (infra/local/mail.ts): the names (`<inbound id>.<account>`) of the
 * copies whose envelope is in pending/, each handed to the one inbound handler, a few at a time, round-robin
 * across the accounts that have mail waiting (FairQueue: one account's flood delays another's mail by one mail's
 * turn, docs/email.md "One account's share"). A failed one waits out its backoff on the service's clock
 * (`retrying`: its attempts so far, what ends its wait at a stop) outside the queue, then goes to its account's
 * back: never lost, never doubled, its slot given to the next mail meanwhile.
 */

const RETRY_MS = [250, 500, 1_000, 2_000, 5_000];
const CONCURRENCY = 4;

export class MailQueue {
  /** A copy's name ends with its account (lib/data/mail-store/layout.ts, queueRecordName). */
  private readonly queue = new FairQueue<string>((id) => id.slice(id.lastIndexOf('.') + 1));
  private readonly queued = new Set<string>();
  private readonly retrying = new Map<string, { attempts: number; waiting?: AbortController }>();
  private running = 0;
  private stopped = false;
  private readonly waiters: (() => void)[] = [];

  constructor(
    /** Where the pending/ and done/ folders are. */
    private readonly dir: string,
    private readonly store: MailStore,
    private readonly onProcessed?: (mail: ReceivedMail, records: InboundRecord[]) => void,
  ) {}

  enqueue(id: string): void {
    if (this.queued.has(id)) return;
    this.queued.add(id);
    this.queue.push(id);
    this.pump();
  }

  /** Resolves once nothing is pending or being processed. */
  idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      this.wakeIdle();
    });
  }

  /** Takes nothing more from the queue, and ends the backoffs being waited out. */
  stop(): void {
    this.stopped = true;
    for (const { waiting } of this.retrying.values()) waiting?.abort();
  }

  private wakeIdle(): void {
    if (this.queue.size === 0 && this.running === 0 && this.retrying.size === 0) {
      for (const w of this.waiters.splice(0)) w();
    }
  }

  private pump(): void {
    while (!this.stopped && this.running < CONCURRENCY && this.queue.size > 0) {
      const id = this.queue.shift() as string;
      this.running += 1;
      this.processOne(id)
        .then((processed) => {
          this.queued.delete(id);
          if (processed) this.retrying.delete(id);
          else if (!this.stopped) this.retryLater(id);
        })
        .finally(() => {
          this.running -= 1;
          this.pump();
          this.wakeIdle();
        });
    }
  }

  private retryLater(id: string): void {
    const attempts = (this.retrying.get(id)?.attempts ?? 0) + 1;
    const waiting = new AbortController();
    void sleep(RETRY_MS[Math.min(attempts - 1, RETRY_MS.length - 1)] as number, waiting.signal).then(() => {
      if (waiting.signal.aborted) return;
      this.retrying.set(id, { attempts });
      this.enqueue(id);
    });
    this.retrying.set(id, { attempts, waiting });
  }

  /**
   * One attempt at a kept mail: true once processed (its log written), its envelope unreadable (nothing to try
   * again) or gone (its ticket's purge took the copy and its records: lib/data/mail-store.ts, purgeMail); false
   * when the store failed.
   */
  private async processOne(id: string): Promise<boolean> {
    const pending = join(this.dir, 'pending', `${id}.json`);
    const read = () => readFile(pending, 'utf8').catch(() => undefined);
    const record = await read();
    if (record === undefined) return true;
    let mail: ReceivedMail;
    try {
      mail = JSON.parse(record) as ReceivedMail;
    } catch (error) {
      console.error(`mail ${id}: ${String(error)}`);
      return true;
    }
    try {
      const records = await receiveMail(mail, this.store);
      await rename(pending, join(this.dir, 'done', `${id}.json`)).catch(() => undefined);
      this.onProcessed?.(mail, records);
      return true;
    } catch (error) {
      if ((await read()) === undefined) return true;
      // The store stalled or failed: the mail stays pending and is tried again (never lost, never doubled).
      if (!this.retrying.has(id)) {
        console.error(`mail ${id}: ${error instanceof Error ? error.message : error} (retrying)`);
      }
      return false;
    }
  }
}
