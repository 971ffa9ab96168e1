import { createHash } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMicros, nowMillis } from '#lib/time.ts';
import { reserveIds } from '../accounts/accounts.ts';
import { besideReservation, giveUpReserved, type ReservedPlaces, reservePlaces } from '../events.ts';
import { dropPending, type Pending, putPending } from '../index/pending.ts';
import { accountKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { table } from '../store/table.ts';
import { tickets } from './ticket-index.ts';

/**
 * Takes the next ticket number (an update of the account's sequences item), the place of its event in the feed
 * (an update of the counter of the feed's shard of a ticket created now: the reservation's `createdUs`, which the
 * ticket's uuid must carry), its pending item (lib/data/index/pending.ts) and, for round-robin, the next cursor of
 * the candidate set from its own item, all
 * beside each other, and runs `reads` beside them (same round trip; the writes wait for the request's rate
 * decision, so a refused create takes none).
 * A number is never handed out twice; one is lost only when the create fails after taking it. When a read
 * fails, the place is given up once the number is answered, so no later event waits behind it.
 */
export function reserveTicketNumber<T>(
  accountId: string,
  roundRobinSet: string | undefined,
  reads: () => Promise<T>,
): Promise<[TicketReservation, T]> {
  const taken = takeTicketNumber(accountId, roundRobinSet);
  return besideReservation(accountId, taken, (r) => r.place, reads()).catch(async (error: unknown) => {
    // The reads failed: no write will use the pending item (besideReservation gave up the place).
    const reserved = await taken.catch(() => undefined);
    if (reserved) await dropPending(reserved.pending);
    throw error;
  });
}

export interface TicketReservation {
  number: number;
  place: ReservedPlaces;
  /** The round-robin cursor of the candidate set (0 without one). */
  cursor: number;
  /** The ticket's creation time (epoch µs): its uuid carries it, and its event's shard follows from it. */
  createdUs: number;
  /** Its pending item (lib/data/index/pending.ts): its terms and unbounded postings go before its commit. */
  pending: Pending;
}

/** A deal's number and its event's place, and a new contact's id and its event's place, taken together. */
export interface DealReservation {
  number: number;
  place: ReservedPlaces;
  contact?: { id: number; place: ReservedPlaces } | undefined;
  /** The deal's (and a new contact's) creation time (epoch µs): their uuids carry it, their events' shard follows. */
  createdUs: number;
}

/**
 * Takes a deal's number and, when the deal brings a new contact, the contact's id, in one UpdateItem of the
 * sequences item, and beside it their events' places (both in the shard of their creation time: one UpdateItem of
 * its counter). It runs once the contact was looked up (the lookup runs beside the request's rate count, which
 * this write waits for anyway): one round trip for both.
 */
export async function reserveDealIds(accountId: string, newContact: boolean): Promise<DealReservation> {
  const createdUs = nowMicros();
  const [ids, places] = await withPlaces(
    accountId,
    reserveIds(accountId, newContact ? { deal: 1, contact: 1 } : { deal: 1 }),
    reservePlaces(accountId, createdUs, newContact ? 2 : 1),
  );
  const [dealPlace, contactPlace] = places.seqs;
  const part = (seq: number | undefined): ReservedPlaces => ({ ...places, seqs: [seq as number] });
  return {
    number: ids.deal as number,
    place: part(dealPlace),
    contact: newContact ? { id: ids.contact as number, place: part(contactPlace) } : undefined,
    createdUs,
  };
}

/**
 * A number's update and its places' taken beside it (one round trip): when the number fails, the places are
 * given up once taken (and the number's error thrown); when the places fail, the number is lost (harmless).
 */
async function withPlaces<N>(
  accountId: string,
  number: Promise<N>,
  places: Promise<ReservedPlaces>,
): Promise<[N, ReservedPlaces]> {
  const [taken, place] = await Promise.allSettled([number, places]);
  if (taken.status === 'fulfilled' && place.status === 'fulfilled') return [taken.value, place.value];
  if (place.status === 'fulfilled') await giveUpReserved(accountId, [place.value]);
  throw taken.status === 'rejected' ? taken.reason : (place as PromiseRejectedResult).reason;
}

/**
 * A candidate set's round-robin cursor lives in an item of its own, named by a 16-character digest of the set
 * (its ids): ~60 bytes whatever the set's size, written only by round-robin creates of that set, and gone 90
 * days after its last use (TTL; the set then starts again from its first agent). On the sequences item, cursors
 * grew it by one attribute per candidate set ever used, and the whole set's ids took it to 4 KB at 1,000 agents.
 */
const cursorDigest = (roundRobinSet: string) =>
  createHash('sha256').update(roundRobinSet).digest('base64url').slice(0, 16);
const CURSOR_TTL_SECONDS = 90 * 24 * 60 * 60;

/**
 * The next round-robin cursor of a candidate set (a create takes one); with `count`, that many in one UpdateItem,
 * answering the last of them (the tests' bulk seeder takes a set's cursors so: last - count + 1 … last).
 */
export async function takeCursor(accountId: string, roundRobinSet: string, count = 1): Promise<number> {
  const { Attributes } = await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: accountKeys.roundRobin(accountId, cursorDigest(roundRobinSet)),
      UpdateExpression: 'ADD #cursor :count SET #expires = :expires',
      ExpressionAttributeNames: { '#cursor': 'cursor', '#expires': table.ttlAttribute },
      ExpressionAttributeValues: {
        ':count': count,
        ':expires': Math.floor(nowMillis() / 1000) + CURSOR_TTL_SECONDS,
      },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.cursor);
}

/** The cursor the next takeCursor of the set would answer, read and left as it is (a dry run: nothing written). */
export async function peekCursor(accountId: string, roundRobinSet: string): Promise<number> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: tableName(),
      Key: accountKeys.roundRobin(accountId, cursorDigest(roundRobinSet)),
      ConsistentRead: true,
    }),
  );
  return Number(Item?.cursor ?? 0) + 1;
}

async function takeTicketNumber(accountId: string, roundRobinSet?: string): Promise<TicketReservation> {
  const createdUs = nowMicros();
  const [numbered, cursor, pending] = await Promise.allSettled([
    withPlaces(accountId, reserveIds(accountId, { ticket: 1 }), reservePlaces(accountId, createdUs, 1)),
    roundRobinSet ? takeCursor(accountId, roundRobinSet) : 0,
    putPending(tickets.index, accountId, createdUs),
  ]);
  const failed = [numbered, cursor, pending].find((r) => r.status === 'rejected');
  if (failed) {
    // No later event waits behind a place no commit will use, and no reader checks a pending item no write uses.
    if (numbered.status === 'fulfilled') await giveUpReserved(accountId, [numbered.value[1]]);
    if (pending.status === 'fulfilled') await dropPending(pending.value);
    throw failed.reason;
  }
  const [ids, place] = (numbered as PromiseFulfilledResult<[Record<string, number>, ReservedPlaces]>).value;
  return {
    number: ids.ticket as number,
    place,
    cursor: (cursor as PromiseFulfilledResult<number>).value,
    createdUs,
    pending: (pending as PromiseFulfilledResult<Pending>).value,
  };
}
