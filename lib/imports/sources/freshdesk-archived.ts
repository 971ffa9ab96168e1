/**
 * Freshdesk's archived tickets (docs/imports.md, "Archived tickets"). Freshdesk archives a ticket closed and
 * untouched for 120 days (or as the account sets), and from then on no list names it: it is read only by its id,
 * `GET /api/v2/tickets/archived/{id}` and `GET /api/v2/tickets/archived/{id}/conversations` (paged). Ticket ids are
 * sequential per account, so the archived ones are among the ids the live list never gave: after the list's last
 * page (a full run only), the reader walks those gaps, 1 to the highest id listed, probing each (404: not archived,
 * skipped: a deleted or spam ticket, or one listed but dropped from a long checkpoint; 200: the ticket, closed, with
 * its conversations). The walk's checkpoint is the next id, the highest, and the listed ids above the next as
 * ranges; a page probes at most `perPage` ids.
 */
import { SourceAnswered, SourceAuthFailed } from '#lib/imports/http.ts';
import type { ImportErrorRow, ImportRecord, SourcePage } from '#lib/imports/records.ts';
import { type FreshdeskObject, fail } from './freshdesk-map.ts';
import { mapTicket } from './freshdesk-ticket-map.ts';

/** Ids as sorted, disjoint, inclusive ranges `[first, last]` (the listed ids: few ranges, ids being sequential). */
export type IdRanges = [number, number][];

/**
 * The most ranges a checkpoint keeps (~7 KB). Past it the shortest range is dropped: its ids are probed too (a live
 * ticket's archived read is a 404, skipped), so a scattered list costs requests, never an archived ticket.
 */
export const MAX_RANGES = 500;

/** The live list's ids so far (a full run's ticket checkpoint carries them): `top` the highest. */
export interface ListedIds {
  ids: IdRanges;
  top: number;
}

/** The walk's checkpoint: the next id to consider, up to `top`, skipping `ids`. */
export interface ArchiveWalk extends ListedIds {
  walk: number;
}

/** What the walk needs of the Freshdesk reader (freshdesk.ts): its client's JSON read, every page of a list. */
export interface ArchiveReads {
  getJson(path: string): Promise<{ body: unknown }>;
  all(path: string): Promise<FreshdeskObject[]>;
  labels(): Promise<Record<string, string>>;
}

export function addListed(listed: ListedIds, rows: FreshdeskObject[]): ListedIds {
  const all: IdRanges = [...listed.ids.map(([a, b]): [number, number] => [a, b])];
  let top = listed.top;
  for (const row of rows) {
    const id = row.id;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) continue;
    all.push([id, id]);
    top = Math.max(top, id);
  }
  all.sort((a, b) => a[0] - b[0]);
  const merged: IdRanges = [];
  for (const [first, last] of all) {
    const previous = merged[merged.length - 1];
    if (previous && first <= previous[1] + 1) previous[1] = Math.max(previous[1], last);
    else merged.push([first, last]);
  }
  while (merged.length > MAX_RANGES) {
    let shortest = 0;
    merged.forEach(([a, b], i) => {
      const [c, d] = merged[shortest] as [number, number];
      if (b - a < d - c) shortest = i;
    });
    merged.splice(shortest, 1);
  }
  return { ids: merged, top };
}

/** The next `count` ids from `walk` up to `top` that no listed range holds. */
export function gapIds({ walk, top, ids }: ArchiveWalk, count: number): number[] {
  const gaps: number[] = [];
  let r = 0;
  for (let id = walk; gaps.length < count && id <= top; ) {
    while (r < ids.length && (ids[r] as [number, number])[1] < id) r++;
    const range = ids[r];
    if (range && range[0] <= id) id = range[1] + 1;
    else gaps.push(id++);
  }
  return gaps;
}

/** Where the walk starts once the list is read (null: no id was listed, nothing to walk). */
export function startWalk(listed: ListedIds): string | null {
  return listed.top > 0 ? JSON.stringify({ walk: 1, ...listed } satisfies ArchiveWalk) : null;
}

const REFUSED =
  'Freshdesk refused the archived tickets (HTTP 403: the plan or the API key does not reach them): none were read';

/** One page of the walk: up to `perPage` gap ids probed, the archived ones read whole (each told to `onTicket`). */
export async function archivedPage(
  reads: ArchiveReads,
  walk: ArchiveWalk,
  perPage: number,
  onTicket?: () => void,
): Promise<SourcePage> {
  const probes = gapIds(walk, perPage);
  const records: ImportRecord[] = [];
  const errors: ImportErrorRow[] = [];
  const labels = probes.length > 0 ? await reads.labels() : {};
  for (const id of probes) {
    let read: Awaited<ReturnType<typeof archivedTicket>>;
    try {
      read = await archivedTicket(reads, id, labels);
    } catch (error) {
      if (error instanceof SourceAuthFailed && error.status === 403) {
        errors.push({ type: 'tickets', sourceId: `archived:${id}`, reason: REFUSED });
        return { records, errors, next: null };
      }
      if (!(error instanceof SourceAnswered)) throw error;
      if (error.status !== 404) errors.push({ type: 'tickets', sourceId: String(id), reason: error.message });
      continue;
    }
    onTicket?.();
    if (read.ok) records.push({ type: 'tickets', ticket: read.value.ticket });
    for (const skipped of read.ok ? read.value.skipped : [])
      errors.push({ type: 'messages', sourceId: skipped.sourceId, reason: skipped.reason });
    if (!read.ok) errors.push({ type: 'tickets', sourceId: String(id), reason: read.reason });
  }
  const last = probes[probes.length - 1] ?? walk.top;
  const rest: ArchiveWalk = { walk: last + 1, top: walk.top, ids: walk.ids.filter(([, b]) => b > last) };
  const more = probes.length === perPage && gapIds(rest, 1).length > 0;
  return { records, errors, next: more ? JSON.stringify(rest) : null };
}

/** An archived ticket whole: closed (Freshdesk archives closed tickets only), closed at its last update if unsaid. */
async function archivedTicket(reads: ArchiveReads, id: number, labels: Record<string, string>) {
  const { body } = await reads.getJson(`/api/v2/tickets/archived/${id}`);
  // Its conversations refused once it answered is an error row of the ticket, never a ticket taken for unarchived.
  const conversations = await reads
    .all(`/api/v2/tickets/archived/${id}/conversations`)
    .catch((error: unknown) => {
      if (error instanceof SourceAnswered) return error;
      throw error;
    });
  if (conversations instanceof SourceAnswered) return fail(conversations.message);
  const ticket = { ...(body && typeof body === 'object' ? (body as FreshdeskObject) : {}), status: 5 };
  const mapped = mapTicket({ ticket, details: ticket, conversations }, labels);
  if (mapped.ok) mapped.value.ticket.closedAt ??= mapped.value.ticket.updatedAt;
  return mapped;
}
