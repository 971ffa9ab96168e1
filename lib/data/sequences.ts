import { createHash } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { reserveIds } from './accounts.ts';
import { dynamo, tableName } from './client.ts';
import { besideReservation, type ReservedPlaces, reservedPlaces } from './events.ts';
import { accountKeys } from './keys.ts';
import { table } from './table.ts';

/**
 * Takes the next ticket number and the place of its event in the feed in one update of the account's sequences
 * item and, for round-robin, the next cursor of the candidate set from its own item beside it, and runs `reads`
 * beside them (same round trip; both writes wait for the request's rate decision, so a refused create takes
 * neither).
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

/** A deal's number and its event's place, and a new contact's id and its event's place, taken together. */
export interface DealReservation {
  number: number;
  place: ReservedPlaces;
  contact?: { id: number; place: ReservedPlaces } | undefined;
}

/**
 * Takes a deal's number and its event's place and, when the deal brings a new contact, the contact's id and its
 * event's place, in one UpdateItem of the sequences item. It runs once the contact was looked up (the lookup runs
 * beside the request's rate count, which this write waits for anyway): one round trip for both.
 */
export async function reserveDealIds(accountId: string, newContact: boolean): Promise<DealReservation> {
  const ids = await reserveIds(
    accountId,
    newContact ? { deal: 1, contact: 1, event: 2 } : { deal: 1, event: 1 },
  );
  const firstPlace = ids.event as number;
  return {
    number: ids.deal as number,
    place: reservedPlaces(firstPlace, 1),
    contact: newContact ? { id: ids.contact as number, place: reservedPlaces(firstPlace + 1, 1) } : undefined,
  };
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

async function takeCursor(accountId: string, roundRobinSet: string): Promise<number> {
  const { Attributes } = await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: accountKeys.roundRobin(accountId, cursorDigest(roundRobinSet)),
      UpdateExpression: 'ADD #cursor :one SET #expires = :expires',
      ExpressionAttributeNames: { '#cursor': 'cursor', '#expires': table.ttlAttribute },
      ExpressionAttributeValues: {
        ':one': 1,
        ':expires': Math.floor(Date.now() / 1000) + CURSOR_TTL_SECONDS,
      },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.cursor);
}

async function takeTicketNumber(accountId: string, roundRobinSet?: string): Promise<TicketReservation> {
  const [ids, cursor] = await Promise.all([
    reserveIds(accountId, { ticket: 1, event: 1 }),
    roundRobinSet ? takeCursor(accountId, roundRobinSet) : 0,
  ]);
  return {
    number: ids.ticket as number,
    place: reservedPlaces(ids.event as number, 1),
    cursor,
  };
}
