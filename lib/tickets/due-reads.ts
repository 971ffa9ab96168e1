import {
  eventShardOfObject,
  giveUpReserved,
  type ReservedPlaces,
  reserveManyPlaces,
} from '#lib/data/events.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import { getTicketsByOrderKeys } from '#lib/data/tickets/tickets.ts';
import { parseTimestamp } from '#lib/time.ts';
import { breachesDue } from './owed-breaches.ts';
import type { Ticket } from './types.ts';

/**
 * The due pass's reads (lib/tickets/breaches.ts): its tickets a hundred at a time (one BatchGetItem), not a GetItem
 * each, read as its workers reach them (a pass holds a chunk or two, not its 600), and after each chunk's read the
 * places of the time-rule firings it holds, one UpdateItem a shard for the chunk (reserveManyPlaces) where each
 * firing took its own just before its commit. A place taken after the read keeps the feed's order for the object:
 * every event of the ticket committed before the read is below it, and a change committed after the read refuses
 * the firing's commit (StaleVersion; its retry reads again and takes a new place, lib/rules/time-change.ts).
 * A place the ticket's commit did not use (its rule no longer fires, a breach written first) is given up when its
 * worker is done with it (`done`). A chunk's read that fails fails its tickets, not the pass; a reservation that
 * fails leaves its tickets to take their own places.
 */

/** Tickets a pass reads in one BatchGetItem (its most). */
export const READ_CHUNK = 100;

export interface DueTicket {
  stored: Versioned<Ticket> | undefined;
  /** The place of its time-rule firing's event, when the read found one due and no breach before it. */
  place: ReservedPlaces | undefined;
}

type Due = { accountId: string; orderKey: string };

/** The due tickets of a pass by their index in `due`, and each worker's `done` with one (its unused place given up). */
export function dueReads(due: readonly Due[], nowUs: number) {
  const chunks = new Map<number, Promise<DueTicket[]>>();
  const at = (i: number): Promise<DueTicket | undefined> => {
    const c = Math.floor(i / READ_CHUNK);
    let chunk = chunks.get(c);
    if (!chunk) {
      chunk = readChunk(due.slice(c * READ_CHUNK, (c + 1) * READ_CHUNK), nowUs);
      chunks.set(c, chunk);
      // Every entry of the chunk before has been taken by a worker, which holds its promise.
      chunks.delete(c - 1);
    }
    return chunk.then((read) => read[i % READ_CHUNK]);
  };
  const done = async (accountId: string, read: DueTicket | undefined) => {
    if (read?.place) await giveUpReserved(accountId, [read.place]);
  };
  return { at, done };
}

async function readChunk(entries: readonly Due[], nowUs: number): Promise<DueTicket[]> {
  const read = await getTicketsByOrderKeys(entries);
  const places: (ReservedPlaces | undefined)[] = [];
  const firing = new Map<string, number[]>();
  read.forEach((stored, i) => {
    if (!stored || !firesFirst(stored.entity, nowUs)) return;
    const accountId = (entries[i] as Due).accountId;
    firing.set(accountId, [...(firing.get(accountId) ?? []), i]);
  });
  await Promise.all(
    [...firing].map(async ([accountId, indexes]) => {
      const wants = indexes.map((i) => ({
        shard: eventShardOfObject({ uuid: (read[i] as Versioned<Ticket>).entity.uuid }),
        count: 1,
      }));
      // Failed (its places closed): these tickets take their own, as outside a pass.
      const taken = await reserveManyPlaces(accountId, wants).catch(() => []);
      taken.forEach((place, j) => {
        places[indexes[j] as number] = place;
      });
    }),
  );
  return read.map((stored, i) => ({ stored, place: places[i] }));
}

/** Whether the ticket's time rules are due now and no breach is owed before them (breachTicket writes those first). */
function firesFirst(ticket: Ticket, nowUs: number): boolean {
  return (
    !!ticket.ruleDueAt && parseTimestamp(ticket.ruleDueAt) <= nowUs && breachesDue(ticket, nowUs).length === 0
  );
}
