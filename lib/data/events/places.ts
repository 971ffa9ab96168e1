import { nowMicros } from '#lib/time.ts';
import { tableName } from '../store/client.ts';
import { ConcurrentWrite, isTransactionConflict } from '../store/errors.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { settleEventPlaces } from './close.ts';
import { takeShardPlaces } from './counter.ts';
import { eventItems } from './item.ts';
import { eventShardOfCreation, eventShardOfObject } from './lanes.ts';
import type { EventDraft } from './shapes.ts';

/**
 * Taking places for a commit's events and the commit actions that write them in it; places no commit used are
 * closed (./close.ts). The feed's design: ../events.ts.
 */

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
 * Places for several changes at once, each `count` in its `shard` (./lanes.ts: an import's page of new tickets by
 * their creation times, lib/imports/ticket-write.ts; the due runner's firings by their tickets', lib/tickets/
 * due-reads.ts): one UpdateItem a shard for all of them (every shard's in one round), handed out in the order
 * given. A shard's take that fails: the places the others took are closed, and it is thrown.
 */
export async function reserveManyPlaces(
  accountId: string,
  wants: { shard: number; count: number }[],
): Promise<ReservedPlaces[]> {
  const counts = new Map<number, number>();
  for (const { shard, count } of wants) counts.set(shard, (counts.get(shard) ?? 0) + count);
  const taken = await Promise.allSettled(
    [...counts].map(
      async ([shard, count]) => [shard, await takeShardPlaces(accountId, shard, count)] as const,
    ),
  );
  const pools = new Map(taken.flatMap((t) => (t.status === 'fulfilled' ? [t.value] : [])));
  const failed = taken.find((t) => t.status === 'rejected');
  if (failed) {
    await settleEventPlaces(accountId, [...pools.values()].flat());
    throw (failed as PromiseRejectedResult).reason;
  }
  const takenUs = nowMicros();
  return wants.map(({ shard, count }) => ({
    shard,
    seqs: (pools.get(shard) as number[]).splice(0, count),
    takenUs,
  }));
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
    const shard = eventShardOfObject(draft.object, draft.type);
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
 * A commit with its events, for a change outside the index engine (which writes its own: ../index/write-plan.ts):
 * the events' places taken just before it and written in it, closed when it does not land (a landed event keeps
 * its place). A transaction conflict, or a place a reader closed meanwhile, is a ConcurrentWrite: decide again.
 */
export async function commitWithEvents(
  accountId: string,
  actions: CommitAction[],
  drafts: EventDraft[],
): Promise<void> {
  let places: EventPlaces | undefined;
  try {
    places = await takeEventPlaces(accountId, drafts);
    await commit([...actions, ...places.actions]);
  } catch (error) {
    if (places) await settleEventPlaces(accountId, places.seqs);
    if (isTransactionConflict(error)) throw new ConcurrentWrite({ cause: error });
    throw error;
  }
}
