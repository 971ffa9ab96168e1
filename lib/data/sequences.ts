import { createHash } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { reserveIds } from './accounts.ts';
import { dynamo, tableName } from './client.ts';
import { besideReservation, giveUpReserved, type ReservedPlaces, reservedPlaces } from './events.ts';
import { accountKeys } from './keys.ts';
import { foldRate } from './rate-limit.ts';

/**
 * Takes the next ticket number, the place of its event in the feed and, for round-robin, the next cursor of the
 * candidate set, in one update of the account's sequences item, and runs `reads` beside it (same round trip).
 * A number is never handed out twice; one is lost only when the create fails after taking it. When a read
 * fails, the place is given up once the number is answered, so no later event waits behind it.
 */
export function reserveTicketNumber<T>(
  accountId: string,
  roundRobinSet: string | undefined,
  reads: () => Promise<T>,
): Promise<[TicketReservation, T]> {
  return besideReservation(accountId, takeTicketNumber(accountId, roundRobinSet), (r) => r.place, reads());
}

export interface TicketReservation {
  number: number;
  place: ReservedPlaces;
  /** The round-robin cursor of the candidate set (0 without one). */
  cursor: number;
}

/** A deal's number and its event's place; `release` gives the place up when the create stops before its commit. */
export interface DealReservation {
  number: number;
  place: ReservedPlaces;
  release(): Promise<void>;
}

/**
 * Takes a deal's number and its event's place in one update, and runs `reads` beside it, giving the place up
 * when a read fails (as reserveTicketNumber).
 */
export function reserveDealNumber<T>(
  accountId: string,
  reads: () => Promise<T>,
): Promise<[DealReservation, T]> {
  const reservation = reserveIds(accountId, { deal: 1, event: 1 }).then((ids) => {
    const place = reservedPlaces(ids.event as number, 1);
    return { number: ids.deal as number, place, release: () => giveUpReserved(accountId, [place]) };
  });
  return besideReservation(accountId, reservation, (r) => r.place, reads());
}

/**
 * Takes a new contact's id and its event's place in one update. When that fails (or its answer is lost), the
 * deal's place is given up too, so that no event waits behind it.
 */
export async function reserveContactId(
  accountId: string,
  deal: Pick<DealReservation, 'release'>,
): Promise<{ id: number; place: ReservedPlaces }> {
  const ids = await reserveIds(accountId, { contact: 1, event: 1 }).catch(async (error) => {
    await deal.release();
    throw error;
  });
  return { id: ids.contact as number, place: reservedPlaces(ids.event as number, 1) };
}

/**
 * The attribute of a candidate set's round-robin cursor: a digest of the set's name, so that a cursor takes ~20
 * bytes whatever the set's size (the name itself, every id of the set, took the sequences item to 4 KB at 1,000
 * agents: 4 write units for every request of the account, which all count their rate on it).
 */
const cursorAttribute = (roundRobinSet: string) =>
  `rr:${createHash('sha256').update(roundRobinSet).digest('base64url').slice(0, 16)}`;

async function takeTicketNumber(accountId: string, roundRobinSet?: string): Promise<TicketReservation> {
  const add = roundRobinSet ? 'ticket :one, event :one, #rr :one' : 'ticket :one, event :one';
  const cursor = roundRobinSet ? cursorAttribute(roundRobinSet) : undefined;
  const names = cursor ? { '#rr': cursor } : undefined;
  const values = { ':one': 1 };
  // The request's rate count rides on this update when it has not been counted yet: a create refused for its
  // rate takes no number, and costs no extra round trip (lib/data/rate-limit.ts).
  const Attributes = await foldRate(accountId, { add, names, values }, async () => {
    const output = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.sequences(accountId),
        UpdateExpression: `ADD ${add}`,
        ...(names ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return output.Attributes ?? {};
  });
  return {
    number: Attributes?.ticket as number,
    place: reservedPlaces(Attributes?.event as number, 1),
    cursor: cursor ? (Attributes?.[cursor] as number) : 0,
  };
}
