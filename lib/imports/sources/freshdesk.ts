/**
 * The Freshdesk import source (decisions.md, "Imports: moving a helpdesk in"): reads a helpdesk through Freshdesk's
 * API v2 with the customer's API key, a page of a phase at a time, mapped (freshdesk-map.ts, freshdesk-ticket-map.ts),
 * keeping no state between pages but `next` (and the ticket fields' labels): a reader made again reads on from it.
 *
 * Tickets: Freshdesk's list stops at page 300 (a 400 past it), and a page number read while tickets are being
 * updated shifts (an updated ticket moves to the end, and the one after it slips onto the page already read). So
 * every page is read as a fresh window: `updated_since` (inclusive) the last ticket's `updated_at`,
 * `order_by=updated_at` ascending, page 1; the tickets of the window's edge already read are carried in `next` (id
 * and `updated_at`) and left out when they come again unchanged. Only when a whole page shares the window's second
 * does the window stay and the page number grow; past the cap, an error row says so and the read goes on. A full
 * run's checkpoint also carries the ids listed, and the list read, the archived tickets are walked in their gaps
 * (freshdesk-archived.ts).
 */

import { attachmentHostsOf, fetchedFiles } from '#lib/imports/attachment-hosts.ts';
import { SourceAnswered, SourceHttp, sourceBaseUrl } from '#lib/imports/http.ts';
import type {
  ImportErrorRow,
  ImportPhase,
  ImportRecord,
  ImportSourceReader,
  SourcePage,
} from '#lib/imports/records.ts';
import type { Timestamp } from '#lib/time.ts';
import { type ArchiveWalk, addListed, archivedPage, startWalk } from './freshdesk-archived.ts';
import {
  type FreshdeskObject,
  idOf,
  type Mapped,
  mapAgent,
  mapCompany,
  mapContact,
  mapGroup,
  membershipsOf,
} from './freshdesk-map.ts';
import { customFieldLabels, mapTicket } from './freshdesk-ticket-map.ts';
import { freshdeskTime, nextWindow, pastCap, secondsOf, type TicketCursor } from './freshdesk-window.ts';

export interface FreshdeskSourceOptions {
  /** `acme` of acme.freshdesk.com. */
  domain: string;
  apiKey: string;
  /** Only what changed since (the cutover pass); a page's own `since` wins. */
  since?: Timestamp | undefined;
  rateShare?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Where IMPORT_FRESHDESK_URL is read (operations.md, "Imports"). */
  env?: Record<string, string | undefined>;
  /** Objects a list page (Freshdesk: at most 100). */
  perPage?: number;
  /** The tickets list's last page (Freshdesk: 300). */
  pageCap?: number;
  /** The longest Retry-After waited inside a page (SourceHttpOptions.maxWaitMs): a bounded run pauses past it. */
  maxWaitMs?: number | undefined;
}

/** Freshdesk's lowest paid plan's limit (Growth: 200 a minute), until an answer's `X-Ratelimit-Total` says more. */
const PUBLISHED_PER_MINUTE = 200;
/** The Growth plan's own limit on listing tickets and on listing contacts (20 a minute each; Pro 100). */
const LISTS_PER_MINUTE = 20;
/** Each include costs a credit a list page; the description comes with each ticket's own read instead. */
const TICKET_INCLUDES = 'stats,requester';
/** The start of history: Freshdesk lists only the last 30 days' tickets without `updated_since`. */
const EPOCH_SECONDS = 0;

/** A list phase's checkpoint: the page to read (and the contacts' `_updated_since`, epoch seconds). */
interface ListCursor {
  page: number;
  since: number | null;
}
const LIST_PATHS = {
  agents: '/api/v2/agents',
  teams: '/api/v2/groups',
  organizations: '/api/v2/companies',
  contacts: '/api/v2/contacts',
} as const;

export function freshdeskSource(options: FreshdeskSourceOptions): ImportSourceReader {
  const client = (publishedPerMinute: number, limitHeaders?: string[]) =>
    new SourceHttp({
      baseUrl: sourceBaseUrl('freshdesk', options.domain, options.env),
      authorization: `Basic ${Buffer.from(`${options.apiKey}:X`).toString('base64')}`,
      rateShare: options.rateShare,
      publishedPerMinute,
      limitHeaders,
      signal: options.signal,
      attachmentHosts: attachmentHostsOf('freshdesk', options.env),
      ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
    });
  // The ticket and contact lists have their own lower limit, which no answer states: a client of their own.
  const http = { api: client(PUBLISHED_PER_MINUTE), lists: client(LISTS_PER_MINUTE, []) };
  const reader = new FreshdeskReader(http, options.perPage ?? 100, options.pageCap ?? 300);
  return {
    source: 'freshdesk',
    files: fetchedFiles(http.api),
    page: (phase, from, { since, onTicket }) => reader.page(phase, from, since ?? options.since, onTicket),
  };
}

function decode<T>(from: string | null, start: T): T {
  if (from === null) return start;
  const cursor = JSON.parse(from) as T;
  if (typeof cursor !== 'object' || cursor === null) throw new Error(`not a Freshdesk checkpoint: ${from}`);
  return cursor;
}

class FreshdeskReader {
  #labels: Record<string, string> | undefined;

  constructor(
    readonly http: { api: SourceHttp; lists: SourceHttp },
    readonly perPage: number,
    readonly pageCap: number,
  ) {}

  async page(phase: ImportPhase, from: string | null, since?: Timestamp, onTicket?: () => void) {
    if (phase === 'tickets') {
      // A full run (no `since`) notes the ids listed, for the archived tickets' walk after the list.
      const start =
        since === undefined ? { since: EPOCH_SECONDS, ids: [], top: 0 } : { since: secondsOf(since) };
      const cursor = decode<TicketCursor | ArchiveWalk>(from, { ...start, page: 1, seen: {} });
      if ('walk' in cursor) return archivedPage(this, cursor, this.perPage, onTicket);
      return this.tickets(cursor, onTicket);
    }
    // The contacts' `since` is kept in the checkpoint, as the tickets' window is: `next` alone reads on.
    const start = phase === 'contacts' && since ? secondsOf(since) : null;
    const { page, since: after } = decode<ListCursor>(from, { page: 1, since: start });
    const query = after === null ? '' : `&_updated_since=${freshdeskTime(after)}`;
    const list = await this.list(`${LIST_PATHS[phase]}?per_page=${this.perPage}&page=${page}${query}`);
    const records: ImportRecord[] = [];
    const errors: ImportErrorRow[] = [];
    const teams = phase === 'agents' ? membershipsOf(await this.all(LIST_PATHS.teams)) : new Map();
    const add = <T>(row: FreshdeskObject, mapped: Mapped<T>, record: (value: T) => ImportRecord) => {
      if (mapped.ok) records.push(record(mapped.value));
      else errors.push({ type: phase, sourceId: idOf(row.id) ?? '', reason: mapped.reason });
    };
    for (const row of list.rows) {
      if (phase === 'agents') add(row, mapAgent(row, teams), (agent) => ({ type: 'agents', agent }));
      if (phase === 'teams') add(row, mapGroup(row), (team) => ({ type: 'teams', team }));
      if (phase === 'organizations')
        add(row, mapCompany(row), (organization) => ({ type: 'organizations', organization }));
      if (phase === 'contacts') add(row, mapContact(row), (contact) => ({ type: 'contacts', contact }));
    }
    return { records, errors, next: list.more ? JSON.stringify({ page: page + 1, since: after }) : null };
  }

  /** A JSON read at the account's rate (the archived tickets' walk reads through it). */
  async getJson(path: string): Promise<{ body: unknown }> {
    return this.http.api.getJson(path);
  }

  /** One page of a list, and whether there is another (Freshdesk's `link` header names it). */
  async list(path: string): Promise<{ rows: FreshdeskObject[]; more: boolean }> {
    const limited = /^\/api\/v2\/(tickets|contacts)\?/.test(path);
    const { body, headers } = await (limited ? this.http.lists : this.http.api).getJson(path);
    if (!Array.isArray(body)) throw new Error(`Freshdesk answered ${path} with something other than a list`);
    return { rows: body as FreshdeskObject[], more: /rel="?next"?/.test(headers.get('link') ?? '') };
  }

  /** Every page of a list (the groups, a ticket's conversations). */
  async all(path: string): Promise<FreshdeskObject[]> {
    const rows: FreshdeskObject[] = [];
    const joiner = path.includes('?') ? '&' : '?';
    for (let page = 1; ; page++) {
      const list = await this.list(`${path}${joiner}per_page=${this.perPage}&page=${page}`);
      rows.push(...list.rows);
      if (!list.more) return rows;
    }
  }

  async tickets(cursor: TicketCursor, onTicket?: () => void): Promise<SourcePage> {
    const labels = await this.labels();
    const query = `updated_since=${freshdeskTime(cursor.since)}&order_by=updated_at&order_type=asc`;
    const path = `/api/v2/tickets?${query}&per_page=${this.perPage}&page=${cursor.page}&include=${TICKET_INCLUDES}`;
    const listed = await this.list(path).catch((error: unknown) => {
      // A 400 past page 1: Freshdesk's cap is lower than the reader's (it answers 400 past its last page).
      if (error instanceof SourceAnswered && error.status === 400 && cursor.page > 1) return null;
      throw error;
    });
    if (listed === null) {
      const next = { since: cursor.since + 1, page: 1, seen: {}, ids: cursor.ids, top: cursor.top };
      return { records: [], errors: [pastCap(cursor)], next: JSON.stringify(next) };
    }
    // A full page may have more after it even without a `link`: a list that stops at its cap names no next page.
    const { rows } = listed;
    const more = listed.more || rows.length >= this.perPage;
    const records: ImportRecord[] = [];
    const errors: ImportErrorRow[] = [];
    for (const row of rows) {
      const id = idOf(row.id);
      if (id !== null && cursor.seen[id] === secondsOf(String(row.updated_at))) continue;
      const read = await this.ticket(row, labels);
      onTicket?.();
      if (read.ok) records.push({ type: 'tickets', ticket: read.value.ticket });
      for (const skipped of read.ok ? read.value.skipped : [])
        errors.push({ type: 'messages', sourceId: skipped.sourceId, reason: skipped.reason });
      if (!read.ok) errors.push({ type: 'tickets', sourceId: id ?? '', reason: read.reason });
    }
    // The list read to its end: a full run walks its gaps for the archived tickets next.
    const known = cursor.ids && addListed({ ids: cursor.ids, top: cursor.top ?? 0 }, rows);
    const next = more
      ? JSON.stringify({ ...nextWindow(cursor, rows, errors, this.pageCap), ...known })
      : null;
    return { records, errors, next: next ?? (known ? startWalk(known) : null) };
  }

  /** A ticket with its description, attachments and conversations; one deleted since it was listed: its reason. */
  async ticket(row: FreshdeskObject, labels: Record<string, string>): Promise<ReturnType<typeof mapTicket>> {
    const id = idOf(row.id);
    if (id === null) return { ok: false, reason: 'the ticket has no id' };
    try {
      const { body } = await this.http.api.getJson(`/api/v2/tickets/${id}`);
      const conversations = await this.all(`/api/v2/tickets/${id}/conversations`);
      const details = body && typeof body === 'object' ? (body as FreshdeskObject) : {};
      return mapTicket({ ticket: row, details, conversations }, labels);
    } catch (error) {
      if (error instanceof SourceAnswered) return { ok: false, reason: error.message };
      throw error;
    }
  }

  async labels(): Promise<Record<string, string>> {
    this.#labels ??= customFieldLabels((await this.http.api.getJson('/api/v2/ticket_fields')).body);
    return this.#labels;
  }
}
