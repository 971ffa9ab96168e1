import { formatTimestamp, nowMillis } from '#lib/time.ts';
import { objectRefKeys } from '../keys/erasures.ts';
import { eventKeys } from '../keys/events.ts';
import { queryAll, tableName } from '../store/client.ts';
import { PACKED_ENCODING, pack, unpack } from '../store/packed.ts';
import { eventId } from './ids.ts';
import type { EventDraft, EventRecord } from './shapes.ts';

/**
 * A place's items as stored (the feed's design: ../events.ts): their types, sizes, retention, how an event is
 * written as them, and their reads.
 */

/** Events are kept 30 days (DynamoDB TTL on `expires_at`; reads skip expired items TTL has not removed yet). */
export const EVENT_RETENTION_SECONDS = 30 * 24 * 60 * 60;

/** DynamoDB holds 400 KB an item: an event's JSON text is stored in parts of at most this many bytes. */
export const PART_BYTES = 350_000;
/** The commit actions one event may take (its item, and one part: a ticket's event is under 700 KB). */
export const MAX_EVENT_ACTIONS = 2;

/**
 * An item not yet past `expires_at` (TTL removes expired items days later). An item with none is kept for good.
 */
export const live = (item: Record<string, unknown>) =>
  item.expires_at === undefined || Number(item.expires_at) > nowMillis() / 1000;
/** How long ago the item's place was taken (or its void written for it). */
export const age = (item: Record<string, unknown>) => nowMillis() - Number(item.at);

/** An event item's (or part's) stored bytes: of the event's JSON text, packed when its head says so. */
export const bodyOf = (item: Record<string, unknown>) =>
  item.body instanceof Uint8Array ? Buffer.from(item.body) : Buffer.alloc(0);

/**
 * An event's JSON text from its head and the stored bytes of its head and parts, in order: unpacked when the head
 * says it was packed (`enc`; lib/data/store/packed.ts), as it is otherwise (events written before packing, or
 * too short to gain from it).
 */
export function eventText(head: Record<string, unknown>, bodies: Buffer[]): Buffer {
  const stored = Buffer.concat(bodies);
  return head.enc === PACKED_ENCODING ? unpack(stored) : stored;
}

/**
 * An event's JSON text as stored: packed when that shortens it, cut in parts of PART_BYTES; `enc` for its head
 * (absent: as it is).
 */
export function storedEventText(text: Buffer): { parts: Buffer[]; enc?: typeof PACKED_ENCODING } {
  const packed = pack(text);
  const bytes = packed ?? text;
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += PART_BYTES) parts.push(bytes.subarray(at, at + PART_BYTES));
  return packed ? { parts, enc: PACKED_ENCODING } : { parts };
}

/**
 * A place's items: the event (or void) and its parts, in order. One Query of its shard's partition.
 */
export function placeItems(accountId: string, seq: number): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :place)',
    ExpressionAttributeValues: {
      ':pk': eventKeys.partitionOf(accountId, seq),
      ':place': eventKeys.sort(seq),
    },
    ConsistentRead: true,
  });
}

/**
 * The items of an event at place `seq` of the account's sequence, taken at `takenUs`: its item, then its parts
 * when its JSON text is longer than one item holds. What a commit puts (on the condition that the place is
 * open); the benchmark's bulk loader writes the same items (and sets the `event` sequence to match).
 */
export function eventItems(
  accountId: string,
  seq: number,
  draft: EventDraft,
  takenUs: number,
): { id: string; items: Record<string, unknown>[] } {
  const record: EventRecord = {
    id: eventId(seq),
    type: draft.type,
    created_at: formatTimestamp(takenUs),
    ...(draft.importId ? { import_id: draft.importId } : {}),
    data: {
      object: draft.object,
      ...(draft.previous ? { previous: draft.previous } : {}),
      ...(draft.extra ?? {}),
      version: draft.version,
    },
  };
  const { parts, enc } = storedEventText(Buffer.from(JSON.stringify(record), 'utf8'));
  const expires_at = Math.floor(takenUs / 1e6) + EVENT_RETENTION_SECONDS;
  const head = {
    ...eventKeys.place(accountId, seq),
    type: eventKeys.itemType.event,
    id: record.id,
    event_type: draft.type,
    at: Math.floor(takenUs / 1000),
    expires_at,
    // The object's reference (keys only): an erasure finds the events of an object by it, never by a Scan.
    ...refOfEvent(accountId, draft, eventKeys.sort(seq)),
    body: parts[0],
    ...(enc ? { enc } : {}),
    // An imported change's: the fan-out, which reads the item and not its body, sends it to no webhook.
    ...(draft.importId ? { import_id: draft.importId } : {}),
    ...(parts.length > 1 ? { parts: parts.length } : {}),
  };
  const rest = parts.slice(1).map((part, i) => ({
    ...eventKeys.part(accountId, seq, i + 1),
    type: 'event_part',
    expires_at,
    body: part,
  }));
  return { id: record.id, items: [head, ...rest] };
}

/** The object reference of an event's item: a message's ticket, or the object itself (erasures find them so). */
function refOfEvent(accountId: string, draft: EventDraft, sk: string): Record<string, string> {
  const object = (draft.object ?? {}) as { uuid?: unknown; ticket_uuid?: unknown };
  const uuid = typeof object.ticket_uuid === 'string' ? object.ticket_uuid : object.uuid;
  return typeof uuid === 'string' ? objectRefKeys.ref(accountId, uuid, 'event', sk) : {};
}
