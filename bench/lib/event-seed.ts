import { type EventDraft, eventItems, placeOf, readFeed, setShardCounter } from '#lib/data/events.ts';
import { EVENT_SHARDS } from '#lib/data/keys.ts';
import { batchPutAll } from '#lib/data/store/client.ts';
import { nowMicros } from '#lib/time.ts';

/**
 * A large events feed without making every change: real events' bodies (from accounts the bench changed through
 * the handlers) copied into the feed's item layout in bulk. bench/event-suite.ts (the feed's pages) and
 * bench/backtest.ts (a rule's backtest) seed their feeds so.
 */

/** One event of each of `types`, from the feeds of these accounts: their bodies, as drafts. */
export async function eventTemplates(
  accountIds: string[],
  types: string[],
): Promise<Map<string, EventDraft>> {
  const found = new Map<string, EventDraft>();
  for (const accountId of accountIds) {
    let after: string | undefined;
    for (;;) {
      const page = await readFeed(accountId, { after, limit: 100, matches: () => true });
      for (const e of page.events) {
        if (!found.has(e.type))
          found.set(e.type, {
            type: e.type,
            object: e.data.object,
            previous: e.data.previous,
            version: e.data.version,
          });
      }
      if (page.last === undefined || types.every((t) => found.has(t))) break;
      after = page.last;
    }
  }
  const missing = types.filter((t) => !found.has(t));
  if (missing.length > 0) throw new Error(`no event of type ${missing.join(', ')} to copy`);
  return found;
}

/**
 * Writes events in bulk into one account's feed (one with no events of its own): each one the items `eventItems`
 * gives for its place (the layout a commit writes), a body copied from a real event of its type, the types in
 * the order of `mix` over and over; then the account's `event` sequence is set to the last place, as the commits
 * would have left it. The places are contiguous, so no reader waits on any.
 */
export class EventSeeder {
  private seeded = 0;
  private readonly ids = new Map<number, string>();
  /** The first event a day ago, one a millisecond after it: inside the 30 days kept. */
  readonly startUs = nowMicros() - 24 * 3600 * 1e6;

  constructor(
    private readonly accountId: string,
    private readonly templates: Map<string, EventDraft>,
    private readonly mix: string[],
    /** The events (by their number from 1) whose ids `idAt` answers. */
    private readonly keep: number[] = [],
  ) {}

  idAt(seq: number): string {
    const id = this.ids.get(seq);
    if (!id) throw new Error(`no seeded event at ${seq}`);
    return id;
  }

  /** Seeds on to `total` events in all; the seconds it took. */
  async seedTo(total: number): Promise<number> {
    const started = performance.now();
    const queue: Record<string, unknown>[] = [];
    const writers: Promise<void>[] = [];
    while (this.seeded < total) {
      const i = ++this.seeded;
      const draft = this.templates.get(this.mix[(i - 1) % this.mix.length] as string) as EventDraft;
      // The i-th event in shard i mod 16, as commits of objects spread over the shards leave them.
      const seq = placeOf(i % EVENT_SHARDS, Math.floor(i / EVENT_SHARDS));
      const { id, items } = eventItems(this.accountId, seq, draft, this.startUs + i * 1000);
      if (this.keep.includes(i)) this.ids.set(i, id);
      queue.push(...items);
      while (queue.length >= 25) {
        writers.push(batchPutAll(queue.splice(0, 25)));
        if (writers.length >= 16) await Promise.all(writers.splice(0));
      }
    }
    if (queue.length > 0) writers.push(batchPutAll(queue.splice(0)));
    await Promise.all(writers);
    await Promise.all(
      Array.from({ length: EVENT_SHARDS }, (_, k) =>
        setShardCounter(this.accountId, k, Math.floor((this.seeded - k) / EVENT_SHARDS)),
      ),
    );
    return (performance.now() - started) / 1000;
  }
}
