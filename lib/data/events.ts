/**
 * The events feed (decisions.md, "Events"; docs/data-model.md, "Events"). Every event has a place in its
 * account's sequence, taken just before the change's commit (one UpdateItem of the sequences item) and written
 * in that commit with the condition that the place is still free. A place whose commit failed is closed with a
 * void item, by its writer, or by a reader once the place is older than any living writer (EVENT_SETTLE_MS):
 * the reader's conditional put and the writer's conditional commit cannot both succeed. So the places below
 * any event a reader has seen are all settled (an event, or void forever), and the feed, read in sequence order
 * up to the first open place, never has an event inserted before one it has served.
 */

export * from './events/feed.ts';
export * from './events/ids.ts';
export * from './events/item.ts';
export * from './events/places.ts';
export * from './events/shapes.ts';
export * from './events/since.ts';
