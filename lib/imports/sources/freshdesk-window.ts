/**
 * The Freshdesk tickets list's windows (freshdesk.ts's comment says why each page is a fresh window): the tickets'
 * checkpoint, where the next page starts, and the error row of a second that fills more pages than the list gives.
 */
import type { ImportErrorRow } from '#lib/imports/records.ts';
import type { ListedIds } from './freshdesk-archived.ts';
import { type FreshdeskObject, idOf } from './freshdesk-map.ts';

export const secondsOf = (time: string): number => Math.floor(Date.parse(time) / 1000);
export const freshdeskTime = (seconds: number): string =>
  `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;

/**
 * The tickets' checkpoint: the window's start (epoch seconds), its page, the edge's tickets already read; a full run's
 * also the ids listed so far (freshdesk-archived.ts).
 */
export interface TicketCursor extends Partial<ListedIds> {
  since: number;
  page: number;
  /** Ticket id → its `updated_at` (epoch seconds) when read. */
  seen: Record<string, number>;
}

/** Where the next page starts (freshdesk.ts's comment says why a fresh window each page). */
export function nextWindow(
  cursor: TicketCursor,
  rows: FreshdeskObject[],
  errors: ImportErrorRow[],
  pageCap: number,
): TicketCursor {
  const times = rows.map((row) => secondsOf(String(row.updated_at))).filter((s) => Number.isFinite(s));
  const last = Math.max(cursor.since, ...times);
  if (last > cursor.since) {
    // A new window from the last ticket's second; of that second, the tickets on this page are read.
    const seen: Record<string, number> = {};
    for (const row of rows) {
      const id = idOf(row.id);
      if (id !== null && secondsOf(String(row.updated_at)) === last) seen[id] = last;
    }
    return { since: last, page: 1, seen };
  }
  // The window stays: its pages read so far are passed by the page number, so `seen` keeps only the edge's
  // tickets read before the window began (at most a page of them).
  if (cursor.page < pageCap) return { since: cursor.since, page: cursor.page + 1, seen: cursor.seen };
  errors.push(pastCap(cursor));
  return { since: cursor.since + 1, page: 1, seen: {} };
}

/** The error row of a second whose tickets fill more pages than the list gives: the rest of it is not read. */
export function pastCap(cursor: TicketCursor): ImportErrorRow {
  return {
    type: 'tickets',
    sourceId: `updated_at:${freshdeskTime(cursor.since)}`,
    reason: `more tickets share this updated_at than ${cursor.page} pages hold (the list's cap): the rest were not read`,
  };
}
