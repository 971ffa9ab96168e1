/** Key builders of the events feed (lib/data/events/; the feed's design: lib/data/events.ts). */

/** How many partitions an account's feed is spread over (docs/data-model.md, "Events"; docs/capacity.md). */
export const EVENT_SHARDS = 16;
/**
 * The first place the shards' counters hand out: shard k's place n is EVENT_PLACE_BASE + n * 16 + k, in partition
 * k (n counts the shard's places: lib/data/events/lanes.ts; a multiple of 16, so a place's shard is place mod 16).
 * 10^13: every place has a 14-digit sort key (lexical order is place order): 5.6 * 10^12 places a shard.
 */
export const EVENT_PLACE_BASE = 10_000_000_000_000;

/**
 * The events feed: an item per place in the account's sequence (an event, or a void place whose commit did not
 * land), place `p` in the account's shard partition `p mod EVENT_SHARDS`, sorted by place; an event too large for
 * one item continues in parts (`<place>#1`). docs/data-model.md, "Events".
 */
export const eventKeys = {
  /** The `type` of an event item (here, the CDK stream filter reads it without the store's client) and a void. */
  itemType: { event: 'event', void: 'event_void' } as const,
  shardPartition: (accountId: string, shard: number) => `EVENTS#${accountId}#${shard}`,
  /** The partition a place's items are written in. */
  partitionOf: (accountId: string, seq: number) => eventKeys.shardPartition(accountId, seq % EVENT_SHARDS),
  /** Every partition of the account's feed: its shards'. */
  partitions: (accountId: string) =>
    Array.from({ length: EVENT_SHARDS }, (_, k) => eventKeys.shardPartition(accountId, k)),
  sort: (seq: number) => String(seq).padStart(14, '0'),
  place: (accountId: string, seq: number) => ({
    pk: eventKeys.partitionOf(accountId, seq),
    sk: eventKeys.sort(seq),
  }),
  part: (accountId: string, seq: number, part: number) => ({
    pk: eventKeys.partitionOf(accountId, seq),
    sk: `${eventKeys.sort(seq)}#${part}`,
  }),
  /**
   * Shard k's place counter: `n` its last place handed out (the n-th of the shard), `at` when (epoch ms), and the
   * last range a reader skipped it over (`bump_from`..`bump_to`, voided by one range item in the same transaction).
   */
  counter: (accountId: string, shard: number) => ({ pk: `EVENT_SEQ#${accountId}#${shard}`, sk: 'EVENT_SEQ' }),
  parse: (sk: string) => {
    const [seq, part] = sk.split('#');
    return { seq: Number(seq), part: part === undefined ? 0 : Number(part) };
  },
  /** The account of a feed partition key (`EVENTS#<acc>#<k>`), or undefined for any other key. */
  accountOf: (pk: string) => /^EVENTS#(.+)#\d+$/.exec(pk)?.[1],
};
