import { randomBytes } from 'node:crypto';
import { intEnv } from '#lib/config/env.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { queryAll, tableName } from '../client.ts';
import { eventKeys } from '../keys.ts';

/**
 * The events feed (decisions.md, "Events"; docs/data-model.md, "Events"). Every event has a place in its
 * account's sequence, taken just before the change's commit (one UpdateItem of the sequences item) and written
 * in that commit with the condition that the place is still free. A place whose commit failed is closed with a
 * void item, by its writer, or by a reader once the place is older than any living writer (EVENT_SETTLE_MS):
 * the reader's conditional put and the writer's conditional commit cannot both succeed. So the places below
 * any event a reader has seen are all settled (an event, or void forever), and the feed, read in sequence order
 * up to the first open place, never has an event inserted before one it has served.
 */

/** The events feed's vocabulary: its drafts and records, ids, limits, and what every read of an event item needs. */

/** Events are kept 30 days (DynamoDB TTL on `expires_at`; reads skip expired items TTL has not removed yet). */
export const EVENT_RETENTION_SECONDS = 30 * 24 * 60 * 60;

/**
 * How old an open place must be before a reader closes it: a writer takes its place at most a function's
 * lifetime before its commit, so a place older than that belongs to a writer that is gone. EVENT_SETTLE_MS
 * replaces it (tests of faults that leave places open; read at each use). Exactness does not depend on it:
 * a commit that lands after its place was closed fails whole.
 */
export const eventSettleMs = () => intEnv('EVENT_SETTLE_MS', FUNCTION_TIMEOUT_MS);

/** DynamoDB holds 400 KB an item: an event's JSON text is stored in parts of at most this many bytes. */
export const PART_BYTES = 350_000;
/** The commit actions one event may take (its item, and one part: a ticket's event is under 700 KB). */
export const MAX_EVENT_ACTIONS = 2;
/** At most this many open places are closed by one page read (each a conditional put, sent together). */
export const MAX_CLOSED_PER_READ = 25;

/** An event as the domain describes it: plain data, written in the change's own commit. */
export interface EventDraft {
  type: string;
  /** The resource as its GET answers it after the change. */
  object: unknown;
  /** The changed fields' values before the change (updates only). */
  previous?: Record<string, unknown>;
  /** The version the change gives the object (the number in its ETag). */
  version: number;
}

/** An event as the API serves it. */
export interface EventRecord {
  id: string;
  type: string;
  created_at: string;
  data: { object: unknown; previous?: Record<string, unknown>; version: number };
}

// `evt_` + the place (base 36, 10 digits: lexical order is sequence order) + 10 hex digits drawn at random,
// so an id of another account (or a made-up one) names no event here even where the place exists.
export const eventId = (seq: number) =>
  `evt_${seq.toString(36).padStart(10, '0')}${randomBytes(5).toString('hex')}`;

/** What an event id looks like (eventId): the one spelling, for the domain's checks and the OpenAPI document. */
export const EVENT_ID_PATTERN = /^evt_[0-9a-z]{10}[0-9a-f]{10}$/;
export const isEventId = (id: string): boolean => EVENT_ID_PATTERN.test(id);

/** The place an event id names, or undefined when it is not an event id at all. */
export function placeOfEventId(id: string): number | undefined {
  return isEventId(id) ? Number.parseInt(id.slice('evt_'.length, 'evt_'.length + 10), 36) : undefined;
}

/** An item not yet past `expires_at` (TTL removes expired items days later). */
export const live = (item: Record<string, unknown>) => Number(item.expires_at) > Date.now() / 1000;
/** How long ago the item's place was taken (or its void written for it). */
export const age = (item: Record<string, unknown>) => Date.now() - Number(item.at);

/** An event item's (or part's) bytes of the event's JSON text. */
export const bodyOf = (item: Record<string, unknown>) =>
  item.body instanceof Uint8Array ? Buffer.from(item.body) : Buffer.alloc(0);

/** A place's items: the event (or void) and its parts, in order. */
export function placeItems(accountId: string, seq: number) {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :place)',
    ExpressionAttributeValues: { ':pk': eventKeys.feedPartition(accountId), ':place': eventKeys.sort(seq) },
    ConsistentRead: true,
  });
}
