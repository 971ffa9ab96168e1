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
import {
  asObjects,
  idOf,
  type Mapped,
  mapAgent,
  mapContact,
  mapOrganization,
  mapTeam,
  mapTicket,
} from './zendesk-map.ts';
import { exportPage, listAll, listPage, startTime } from './zendesk-pages.ts';

/**
 * The Zendesk source (docs/imports.md, "Zendesk"): each phase a stream of pages of Zendesk's REST API, read with
 * the customer's API token. `next` is the path of the next page (a list's `links.next`, or an export's
 * `after_cursor` made a path), so a reader made again from nothing but `next` reads on. Lists use cursor
 * pagination; end users and tickets the incremental cursor exports (archived tickets included), which have a limit
 * of their own (10 a minute): they are read by a second client paced to it.
 */

export interface ZendeskSourceOptions {
  subdomain: string;
  email: string;
  apiToken: string;
  /** Only what changed since (the cutover pass): the exports' start_time. */
  since?: Timestamp | undefined;
  rateShare?: number | undefined;
  /** Tickets a page of the ticket phase (each costs a request for its comments). */
  ticketsPerPage?: number;
  /** The operator's environment (IMPORT_ZENDESK_URL). */
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal | undefined;
  /** The longest Retry-After waited inside a page (SourceHttpOptions.maxWaitMs): a bounded run pauses past it. */
  maxWaitMs?: number | undefined;
}

/** The lowest plan's documented account limit (Team: 200 a minute) until an answer states the account's own. */
const PUBLISHED_PER_MINUTE = 200;
/** The incremental exports' own documented limit; their answers state the account's, so it is kept. */
const EXPORTS_PER_MINUTE = 10;
const LIST_PAGE = 100;

interface Clients {
  api: SourceHttp;
  exports: SourceHttp;
  ticketsPerPage: number;
}

type PhaseReader = (
  clients: Clients,
  from: string | null,
  since: Timestamp | undefined,
  onTicket?: (() => void) | undefined,
) => Promise<SourcePage>;

export function zendeskSource(options: ZendeskSourceOptions): ImportSourceReader {
  const baseUrl = sourceBaseUrl('zendesk', options.subdomain, options.env);
  const token = Buffer.from(`${options.email}/token:${options.apiToken}`).toString('base64');
  const common = {
    baseUrl,
    authorization: `Basic ${token}`,
    rateShare: options.rateShare,
    signal: options.signal,
    attachmentHosts: attachmentHostsOf('zendesk', options.env),
    ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
  };
  const clients: Clients = {
    api: new SourceHttp({ ...common, publishedPerMinute: PUBLISHED_PER_MINUTE }),
    exports: new SourceHttp({ ...common, publishedPerMinute: EXPORTS_PER_MINUTE, limitHeaders: [] }),
    ticketsPerPage: options.ticketsPerPage ?? 100,
  };
  return {
    source: 'zendesk',
    files: fetchedFiles(clients.api),
    page: (phase, from, { since, onTicket }) =>
      PHASES[phase](clients, from, since ?? options.since, onTicket),
  };
}

const PHASES: Record<ImportPhase, PhaseReader> = {
  agents: readAgents,
  teams: (clients, from) =>
    readList(clients.api, from ?? `/api/v2/groups?page[size]=${LIST_PAGE}`, 'groups', (page, group) =>
      collect(page, mapTeam(group), (team) => ({ type: 'teams', team })),
    ),
  organizations: (clients, from) =>
    readList(
      clients.api,
      from ?? `/api/v2/organizations?page[size]=${LIST_PAGE}`,
      'organizations',
      (page, org) =>
        collect(page, mapOrganization(org), (organization) => ({ type: 'organizations', organization })),
    ),
  contacts: readContacts,
  tickets: readTickets,
};

/** A mapped item into the page: a record, an error row, or nothing (skipped). */
function collect<T>(page: SourcePage, mapped: Mapped<T>, record: (value: T) => ImportRecord): void {
  if ('value' in mapped) page.records.push(record(mapped.value));
  else if ('error' in mapped) page.errors.push(mapped.error);
}

type Json = Record<string, unknown>;

/** A page of a list with cursor pagination (`meta.has_more`, `links.next`), each item mapped. */
async function readList(
  http: SourceHttp,
  url: string,
  key: string,
  map: (page: SourcePage, item: Json) => void,
): Promise<SourcePage> {
  const { items, next } = await listPage(http, url, key);
  const page: SourcePage = { records: [], errors: [], next };
  for (const item of items) map(page, item);
  return page;
}

async function readAgents(clients: Clients, from: string | null): Promise<SourcePage> {
  const first = `/api/v2/users?role[]=agent&role[]=admin&page[size]=${LIST_PAGE}`;
  const { items, next } = await listPage(clients.api, from ?? first, 'users');
  const memberships = await listAll(
    clients.api,
    `/api/v2/group_memberships?page[size]=${LIST_PAGE}`,
    'group_memberships',
  );
  const teams = new Map<string, string[]>();
  for (const membership of memberships.items) {
    const [user, group] = [idOf(membership.user_id), idOf(membership.group_id)];
    if (user && group) teams.set(user, [...(teams.get(user) ?? []), group]);
  }
  const page: SourcePage = { records: [], errors: [], next };
  for (const user of items)
    collect(page, mapAgent(user, teams.get(idOf(user.id) ?? '') ?? []), (agent) => ({
      type: 'agents',
      agent,
    }));
  return page;
}

async function readContacts(clients: Clients, from: string | null, since: Timestamp | undefined) {
  const path = '/api/v2/incremental/users/cursor.json';
  const { items, next } = await exportPage(
    clients.exports,
    from ?? `${path}?start_time=${startTime(since)}`,
    'users',
    path,
    '',
  );
  const page: SourcePage = { records: [], errors: [], next };
  for (const user of items) collect(page, mapContact(user), (contact) => ({ type: 'contacts', contact }));
  return page;
}

/**
 * A page of the ticket export (deleted tickets left out, solved times sideloaded), each ticket with its whole
 * conversation: its comments read per ticket (docs/imports.md says why not the ticket events export).
 */
async function readTickets(
  clients: Clients,
  from: string | null,
  since: Timestamp | undefined,
  onTicket?: (() => void) | undefined,
) {
  const path = '/api/v2/incremental/tickets/cursor.json';
  const params = `&per_page=${clients.ticketsPerPage}&exclude_deleted=true&include=metric_sets`;
  const first = `${path}?start_time=${startTime(since)}${params}`;
  const { items, next, body } = await exportPage(clients.exports, from ?? first, 'tickets', path, params);
  const page: SourcePage = { records: [], errors: [], next };
  if (items.length === 0) return page;
  const fields = await listAll(clients.api, `/api/v2/ticket_fields?page[size]=${LIST_PAGE}`, 'ticket_fields');
  const fieldTitles = new Map<string, string>();
  for (const field of fields.items)
    if (idOf(field.id) && typeof field.title === 'string') fieldTitles.set(idOf(field.id) ?? '', field.title);
  const solvedAt = new Map<string, unknown>();
  for (const metrics of asObjects(body?.metric_sets))
    solvedAt.set(idOf(metrics.ticket_id) ?? '', metrics.solved_at);
  for (const ticket of items) {
    if (ticket.status === 'deleted') continue;
    const conversation = await commentsOf(clients.api, ticket, page.errors);
    onTicket?.();
    if (!conversation) continue;
    const { mapped, errors } = mapTicket(ticket, { fieldTitles, solvedAt, ...conversation });
    page.errors.push(...errors);
    collect(page, mapped, (value) => ({ type: 'tickets', ticket: value }));
  }
  return page;
}

/** A ticket's comments, oldest first, with their authors' roles; null (and an error row) when they cannot be read. */
async function commentsOf(http: SourceHttp, ticket: Json, errors: ImportErrorRow[]) {
  const id = idOf(ticket.id);
  if (!id) return { comments: [], roles: new Map<string, string>() };
  try {
    const url = `/api/v2/tickets/${encodeURIComponent(id)}/comments.json?page[size]=${LIST_PAGE}&include=users&include_inline_images=true`;
    const { items, users } = await listAll(http, url, 'comments');
    const roles = new Map<string, string>();
    for (const user of users) if (typeof user.role === 'string') roles.set(idOf(user.id) ?? '', user.role);
    return { comments: items, roles };
  } catch (error) {
    if (!(error instanceof SourceAnswered)) throw error;
    errors.push({
      type: 'tickets',
      sourceId: id,
      reason: `its comments could not be read (HTTP ${error.status})`,
    });
    return null;
  }
}
