import { eventShardOfObject } from '#lib/data/events.ts';
import { EVENT_SHARDS } from '#lib/data/keys.ts';

/**
 * Objects for test drafts whose events go to a given shard of the feed (an object's events all go to one shard:
 * lib/data/events/lanes.ts): found by trying `{ [tag]: true, n }` for n = 0, 1, ….
 */
export function objectInShard(shard: number, tag: string): Record<string, unknown> {
  for (let n = 0; ; n++) {
    const object = { [tag]: true, n };
    if (eventShardOfObject(object) === shard) return object;
  }
}

/** One draft object in each of the feed's shards, in shard order. */
export const objectsInEveryShard = (tag: string) =>
  Array.from({ length: EVENT_SHARDS }, (_, shard) => objectInShard(shard, tag));
