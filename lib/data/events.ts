/**
 * The events feed (decisions.md, "Events"; docs/data-model.md, "Events"). Every event has a place, taken just
 * before the change's commit and written in that commit on the condition that the place is still free. Places
 * come from 16 counters a account, one per feed partition (`EVENT_SEQ#<acc>#<k>`: shard k hands out
 * EVENT_PLACE_BASE + n * 16 + k, n = 0, 1, …; one UpdateItem each), and every object's events go to one shard
 * (its creation time's), so an object's events take rising places. The feed is read in place order, all
 * partitions in one round, up to the first place that is not settled: an event, a void (a commit that did not
 * land, closed by its writer, or by a reader once older than any living writer: EVENT_SETTLE_MS; the reader's
 * conditional put and the writer's conditional commit cannot both succeed), or a place a range void covers. A
 * shard that lags behind the place a page would serve is moved past it by the reader (a bump: its counter set
 * ahead on the condition that it still stands where the reader found it, recording the places it skips; one
 * UpdateItem, then one range void item for those places), so no writer can be handed a place below one a reader
 * served. So the places below any event a reader has seen are all settled, and nothing is ever inserted before
 * an event served.
 */

export * from './events/bump.ts';
export * from './events/close.ts';
export * from './events/counter.ts';
export * from './events/feed.ts';
export * from './events/ids.ts';
export * from './events/item.ts';
export * from './events/lanes.ts';
export * from './events/places.ts';
export * from './events/shapes.ts';
export * from './events/since.ts';
export * from './events/window.ts';
