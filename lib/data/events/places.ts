import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { intEnv } from '#lib/config/env.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { formatTimestamp, nowMicros, nowMillis } from '#lib/time.ts';
import { dynamo, tableName } from '../client.ts';
import { ConcurrentWrite, isConditionFailure, isTransactionConflict } from '../errors.ts';
import { eventKeys, objectRefKeys } from '../keys.ts';
import type { CommitAction } from '../transact.ts';
import { eventId } from './ids.ts';
import { EVENT_RETENTION_SECONDS, PART_BYTES } from './item.ts';
import { eventShardOfCreation, eventShardOfObject, takeShardPlaces } from './lanes.ts';
import type { EventDraft, EventRecord } from './shapes.ts';

/** Taking places for a commit's events, writing them in it, and closing the places of commits that did not land (the feed's design: ../events.ts). */

/**
 * How old an open place must be before a reader closes it: a writer takes its place at most a function's
 * lifetime before its commit, so a place older than that belongs to a writer that is gone. EVENT_SETTLE_MS
 * replaces it (tests of faults that leave places open; read at each use). Exactness does not depend on it:
 * a commit that lands after its place was closed fails whole.
 */
export const eventSettleMs = () => intEnv('EVENT_SETTLE_MS', FUNCTION_TIMEOUT_MS);

/** At most this many open places are closed by one page read (each a conditional put, sent together). */
export const MAX_CLOSED_PER_READ = 25;

/** Places in the account's sequence, taken for one commit's events; settled when the commit does not land. */
export interface EventPlaces {
  accountId: string;
  actions: CommitAction[];
  seqs: number[];
}

/**
 * Places a create took beside its number (in the same round trip), in the shard of the object it creates: its
 * first commit uses them; a retry takes new ones (the first commit's are settled, by then).
 */
export interface ReservedPlaces {
  shard: number;
  seqs: number[];
  takenUs: number;
  spent?: boolean;
}

/**
 * Takes `count` places for the objects a create makes at `createdUs` (their uuids carry that time, so their
 * events' shard is known before the uuids are): one UpdateItem of that shard's counter.
 */
export async function reservePlaces(
  accountId: string,
  createdUs: number,
  count: number,
): Promise<ReservedPlaces> {
  const shard = eventShardOfCreation(createdUs);
  const seqs = await takeShardPlaces(accountId, shard, count);
  return { shard, seqs, takenUs: nowMicros() };
}

/**
 * The places of a commit's events, and the commit actions that write them: each event's item on the condition
 * that its place is still open (ConcurrentWrite otherwise: a reader closed it, nothing was written, decide again
 * with new places). Each event goes to its object's shard: a reserved place of that shard when there is one, else
 * one UpdateItem a shard takes them (the shards' takes in one round); reserved places left over are closed.
 */
export async function takeEventPlaces(
  accountId: string,
  drafts: EventDraft[],
  reserved: ReservedPlaces[] = [],
): Promise<EventPlaces> {
  const usable = reserved.filter((r) => !r.spent);
  for (const r of reserved) r.spent = true;
  // Each shard's reserved places, in order: its events take them in the order they are drafted.
  const pools = new Map<number, { seq: number; takenUs: number }[]>();
  for (const r of usable) {
    const pool = pools.get(r.shard) ?? [];
    pool.push(...r.seqs.map((seq) => ({ seq, takenUs: r.takenUs })));
    pools.set(r.shard, pool);
  }
  for (const pool of pools.values()) pool.sort((a, b) => a.seq - b.seq);
  const seqs: number[] = [];
  const takenAt: number[] = [];
  const wanted = new Map<number, number[]>();
  for (const [i, draft] of drafts.entries()) {
    const shard = eventShardOfObject(draft.object);
    const own = pools.get(shard)?.shift();
    if (own) {
      seqs[i] = own.seq;
      takenAt[i] = own.takenUs;
    } else wanted.set(shard, [...(wanted.get(shard) ?? []), i]);
  }
  const left = [...pools.values()].flat().map((p) => p.seq);
  if (left.length > 0) await settleEventPlaces(accountId, left);
  const taken = await Promise.allSettled(
    [...wanted].map(async ([shard, indexes]) => {
      const places = await takeShardPlaces(accountId, shard, indexes.length);
      const takenUs = nowMicros();
      for (const [j, i] of indexes.entries()) {
        seqs[i] = places[j] as number;
        takenAt[i] = takenUs;
      }
    }),
  );
  const failed = taken.find((t) => t.status === 'rejected');
  if (failed) {
    // One shard's take failed: the others' places are closed (no commit will use them).
    const got = seqs.filter((seq) => seq !== undefined);
    if (got.length > 0) await settleEventPlaces(accountId, got);
    throw (failed as PromiseRejectedResult).reason;
  }
  const actions = drafts.flatMap((draft, i) =>
    eventActions(accountId, seqs[i] as number, draft, takenAt[i] as number),
  );
  return { accountId, actions, seqs };
}

function eventActions(accountId: string, seq: number, draft: EventDraft, takenUs: number): CommitAction[] {
  const [head, ...parts] = eventItems(accountId, seq, draft, takenUs).items;
  return [
    {
      what: 'event',
      action: {
        Put: {
          TableName: tableName(),
          Item: head as Record<string, unknown>,
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      refused: () => new ConcurrentWrite(),
    },
    ...parts.map(
      (Item): CommitAction => ({ what: 'event_part', action: { Put: { TableName: tableName(), Item } } }),
    ),
  ];
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
    data: {
      object: draft.object,
      ...(draft.previous ? { previous: draft.previous } : {}),
      ...(draft.extra ?? {}),
      version: draft.version,
    },
  };
  const text = Buffer.from(JSON.stringify(record), 'utf8');
  const parts: Buffer[] = [];
  for (let at = 0; at < text.length; at += PART_BYTES) parts.push(text.subarray(at, at + PART_BYTES));
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

/**
 * Closes places whose commit did not land (or may not have): a void item where none is. A place whose event
 * landed stays as it is. Best effort: a place left open is closed by a reader after EVENT_SETTLE_MS.
 */
export async function settleEventPlaces(accountId: string, seqs: number[]): Promise<boolean> {
  const closed = await Promise.all(seqs.map((seq) => closePlace(accountId, seq).catch(() => false)));
  return closed.every(Boolean);
}

/**
 * Gives up the reserved places no commit used (a commit's writer settles those it used): a create that fails
 * between taking its number and its commit (a read beside the number failing, a refusal) closes them at once
 * instead of holding every later event of the account for the settle window.
 */
export async function giveUpReserved(
  accountId: string,
  reserved: (ReservedPlaces | undefined)[],
): Promise<void> {
  const unused = reserved.filter((r): r is ReservedPlaces => r !== undefined && !r.spent);
  for (const r of unused) r.spent = true;
  const seqs = unused.flatMap((r) => r.seqs);
  if (seqs.length > 0) await settleEventPlaces(accountId, seqs);
}

/**
 * A reservation of places awaited beside other reads: when a read fails, the places are given up once the
 * reservation answers (Promise.all alone would reject at once and leave them open).
 */
export async function besideReservation<R, T>(
  accountId: string,
  reservation: Promise<R>,
  placesOf: (reserved: R) => ReservedPlaces,
  reads: Promise<T>,
): Promise<[R, T]> {
  try {
    return await Promise.all([reservation, reads]);
  } catch (error) {
    const reserved = await reservation.catch(() => undefined);
    if (reserved !== undefined) await giveUpReserved(accountId, [placesOf(reserved)]);
    throw error;
  }
}

/**
 * Answers true when the place is now void by this call, false when something (an event) is there, or a commit
 * touching it was in flight (a TransactionConflict: the reader tries again on its next page). `at`: the time no
 * place below it was taken after (now, for a writer closing its own; a reader closing places below an item gives
 * that item's, so the voids it writes do not look younger than the places they close).
 *
 * The void is put at the place's key on the condition that it is free, as the writer puts its event: exactly one
 * of the void and the event lands.
 */
export async function closePlace(accountId: string, seq: number, at = nowMillis()): Promise<boolean> {
  const put = {
    TableName: tableName(),
    Item: {
      ...eventKeys.place(accountId, seq),
      type: eventKeys.itemType.void,
      // A cursor past a run of voids names the last of them (readFeed): an id as an event's, no event's.
      id: eventId(seq),
      at,
      expires_at: Math.floor(nowMillis() / 1000) + EVENT_RETENTION_SECONDS,
    },
    ConditionExpression: 'attribute_not_exists(pk)',
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await dynamo.send(new PutCommand(put));
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      // A commit (or another close) of this place in flight: its outcome decides; asked again a few times.
      if (isTransactionConflict(error)) {
        if (attempt < CLOSE_ATTEMPTS) continue;
        return false;
      }
      throw error;
    }
  }
}

/** Attempts of a close cancelled by a transaction in flight on the place (closePlace). */
const CLOSE_ATTEMPTS = 3;

/** The object reference of an event's item: a message's ticket, or the object itself (erasures find them so). */
function refOfEvent(accountId: string, draft: EventDraft, sk: string): Record<string, string> {
  const object = (draft.object ?? {}) as { uuid?: unknown; ticket_uuid?: unknown };
  const uuid = typeof object.ticket_uuid === 'string' ? object.ticket_uuid : object.uuid;
  return typeof uuid === 'string' ? objectRefKeys.ref(accountId, uuid, 'event', sk) : {};
}
