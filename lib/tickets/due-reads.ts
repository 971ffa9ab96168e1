import {
  eventShardOfObject,
  giveUpReserved,
  type ReservedPlaces,
  reserveManyPlaces,
} from '#lib/data/events.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import { getTicketsByOrderKeys } from '#lib/data/tickets/tickets.ts';
import { logError } from '#lib/log.ts';
import { momentPassed } from '#lib/rules/time-change.ts';
import { nowMicros } from '#lib/time.ts';
import { breachesDue } from './owed-breaches.ts';
import type { Ticket } from './types.ts';

/**
 * The due pass's reads (lib/tickets/breaches.ts): its tickets a hundred at a time (one BatchGetItem), not a GetItem
 * each, read as its workers reach them (a pass holds a chunk or two, not its 600), and after each chunk's read the
 * places of the events its tickets' first commits write (their breaches', else their time rules'), one UpdateItem
 * a shard for the chunk (reserveManyPlaces) where each commit took its own just before it. A place taken after the
 * read keeps the feed's order for the object: every event of the ticket committed before the read is below it,
 * and a change committed after the read refuses the commit (StaleVersion; its retry reads again and takes a new
 * place: breachTicket, lib/rules/time-change.ts). A place no commit used (a clock completed, a rule that no longer
 * fires) is given up when its worker is done with the ticket (`done`). A chunk's read that fails fails its
 * tickets, not the pass; a reservation that fails leaves its tickets to take their own places.
 */

/** Tickets a pass reads in one BatchGetItem (its most). */
const READ_CHUNK = 100;

export interface DueTicket {
  stored: Versioned<Ticket> | undefined;
  /** The places of its first commit's events as the read shows them: its breaches', else its time rules'. */
  place: ReservedPlaces | undefined;
}

interface Due {
  accountId: string;
  orderKey: string;
}

/** The due tickets of a pass by their index in `due`, and each worker's `done` with one (its unused place given up). */
export function dueReads(due: readonly Due[]) {
  const chunks = new Map<number, Promise<DueTicket[]>>();
  const at = (i: number): Promise<DueTicket | undefined> => {
    const c = Math.floor(i / READ_CHUNK);
    let chunk = chunks.get(c);
    if (!chunk) {
      chunk = readChunk(due.slice(c * READ_CHUNK, (c + 1) * READ_CHUNK));
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

async function readChunk(entries: readonly Due[]): Promise<DueTicket[]> {
  const read = await getTicketsByOrderKeys(entries);
  const nowUs = nowMicros();
  const places: (ReservedPlaces | undefined)[] = [];
  const writing = new Map<string, { i: number; shard: number; count: number }[]>();
  read.forEach((stored, i) => {
    const count = stored ? firstEvents(stored.entity, nowUs) : 0;
    if (!stored || count === 0) return;
    const accountId = (entries[i] as Due).accountId;
    const shard = eventShardOfObject({ uuid: stored.entity.uuid });
    const wants = writing.get(accountId) ?? [];
    wants.push({ i, shard, count });
    writing.set(accountId, wants);
  });
  await Promise.all(
    [...writing].map(async ([accountId, wants]) => {
      // Failed (its places closed): these tickets take their own, as outside a pass.
      const taken = await reserveManyPlaces(accountId, wants).catch((error: unknown) => {
        logError(error);
        return [];
      });
      taken.forEach((place, j) => {
        places[(wants[j] as { i: number }).i] = place;
      });
    }),
  );
  return read.map((stored, i) => ({ stored, place: places[i] }));
}

/**
 * The events the ticket's first commit of the pass writes, as its read shows them: a `ticket.sla_breached` a clock
 * owed (breachTicket writes those first), else one `ticket.updated` when its time rules are due (a firing's notes
 * and replies take their own places beside it), else none.
 */
function firstEvents(ticket: Ticket, nowUs: number): number {
  const owed = breachesDue(ticket, nowUs).length;
  if (owed > 0) return owed;
  return momentPassed(ticket, nowUs) ? 1 : 0;
}
