import { type Answer, startVendorServer, type VendorServer } from './server.ts';

/**
 * A local server speaking Zendesk's REST API as its documentation shows it (developer.zendesk.com: Users, Groups,
 * Group Memberships, Organizations, Ticket Fields, Ticket Comments, Incremental Exports), over a small made-up
 * account: lists with cursor pagination (`page[size]`, `page[after]`, `meta.has_more`, `links.next`), the
 * incremental cursor exports (`start_time`, `cursor`, `after_cursor`, `end_of_stream`), Basic auth with an API
 * token (401 otherwise). Pages are small (`pageSize`, `exportPageSize`) so a test pages; faults come from
 * server.ts's queue.
 */

type Json = Record<string, unknown>;

export interface ZendeskData {
  users: Json[];
  groups: Json[];
  groupMemberships: Json[];
  organizations: Json[];
  ticketFields: Json[];
  tickets: Json[];
  /** Ticket id → its comments, oldest first. */
  comments: Record<string, Json[]>;
  /** Attachment token → its bytes, served at a comment attachment's content_url (`/attachments/token/<token>/`). */
  files?: Record<string, Buffer>;
}

export interface ZendeskServer extends VendorServer {
  data: ZendeskData;
  /** Items a list page holds at most (whatever page[size] asks). */
  pageSize: number;
  /** Items an export page holds at most (whatever per_page asks). */
  exportPageSize: number;
  /** Where `links.next` points (a test of a next page on another host); the server's own origin by default. */
  linkOrigin: string | null;
}

export const ZENDESK_EMAIL = 'admin@acme.test';
export const ZENDESK_TOKEN = 'zd-secret-token-6wD1sLx0';

const at = (iso: string) => iso;
const cursorOf = (index: number) => Buffer.from(String(index)).toString('base64url');
const indexOf = (cursor: string | null) =>
  cursor ? Number(Buffer.from(cursor, 'base64url').toString()) || 0 : 0;

export async function startZendesk(data: ZendeskData = zendeskFixture()): Promise<ZendeskServer> {
  const expected = `Basic ${Buffer.from(`${ZENDESK_EMAIL}/token:${ZENDESK_TOKEN}`).toString('base64')}`;
  let zendesk: ZendeskServer | undefined;
  const base = await startVendorServer((url, request) => {
    if (!zendesk) return { status: 503 };
    if (request.headers.authorization !== expected)
      return { status: 401, body: { error: "Couldn't authenticate you" } };
    return route(zendesk, url);
  });
  zendesk = Object.assign(base, { data, pageSize: 2, exportPageSize: 3, linkOrigin: null });
  return zendesk;
}

function route(zendesk: ZendeskServer, url: URL): Answer {
  const { data } = zendesk;
  const path = url.pathname;
  const list = (key: string, items: Json[], extra?: (page: Json[]) => Json) =>
    listPage(zendesk, url, key, items, extra);
  if (path === '/api/v2/users') {
    const roles = url.searchParams.getAll('role[]');
    return list(
      'users',
      roles.length ? data.users.filter((u) => roles.includes(String(u.role))) : data.users,
    );
  }
  const file = /^\/attachments\/token\/([^/]+)\/$/.exec(path);
  if (file) {
    const bytes = data.files?.[file[1] ?? ''];
    return bytes ? { status: 200, body: bytes } : { status: 404, body: { error: 'RecordNotFound' } };
  }
  if (path === '/api/v2/groups') return list('groups', data.groups);
  if (path === '/api/v2/group_memberships') return list('group_memberships', data.groupMemberships);
  if (path === '/api/v2/organizations') return list('organizations', data.organizations);
  if (path === '/api/v2/ticket_fields') return list('ticket_fields', data.ticketFields);
  const comments = /^\/api\/v2\/tickets\/(\d+)\/comments\.json$/.exec(path);
  if (comments) {
    const found = data.comments[comments[1] ?? ''];
    if (!found) return { status: 404, body: { error: 'RecordNotFound', description: 'Not found' } };
    const users = (page: Json[]) => ({
      users: data.users.filter((u) => page.some((c) => c.author_id === u.id)),
    });
    return list('comments', found, url.searchParams.get('include') === 'users' ? users : undefined);
  }
  if (path === '/api/v2/incremental/users/cursor.json') return exportPage(zendesk, url, 'users', data.users);
  if (path === '/api/v2/incremental/tickets/cursor.json') {
    const tickets =
      url.searchParams.get('exclude_deleted') === 'true'
        ? data.tickets.filter((t) => t.status !== 'deleted')
        : data.tickets;
    return exportPage(zendesk, url, 'tickets', tickets);
  }
  return { status: 404, body: { error: 'InvalidEndpoint', description: 'Not found' } };
}

function listPage(
  zendesk: ZendeskServer,
  url: URL,
  key: string,
  items: Json[],
  extra?: (page: Json[]) => Json,
) {
  const size = Math.min(Number(url.searchParams.get('page[size]')) || 100, zendesk.pageSize);
  const start = indexOf(url.searchParams.get('page[after]'));
  const page = items.slice(start, start + size);
  const hasMore = start + size < items.length;
  const next = new URL(url.pathname + url.search, zendesk.linkOrigin ?? zendesk.url);
  next.searchParams.set('page[after]', cursorOf(start + size));
  return {
    status: 200,
    body: {
      [key]: page,
      ...extra?.(page),
      meta: { has_more: hasMore, after_cursor: hasMore ? cursorOf(start + size) : null, before_cursor: null },
      links: { next: hasMore ? next.toString() : null, prev: null },
    },
  };
}

/** An incremental cursor export: items changed at or after start_time, oldest change first. */
function exportPage(zendesk: ZendeskServer, url: URL, key: string, items: Json[]): Answer {
  // Zendesk's export cursor holds where the stream stands (a time and an id); this one, the start_time and index.
  const cursor = url.searchParams.get('cursor');
  const [startTime = Number.NaN, start = Number.NaN] = cursor
    ? Buffer.from(cursor, 'base64url').toString().split('|').map(Number)
    : [Number(url.searchParams.get('start_time')), 0];
  if (
    !Number.isFinite(startTime) ||
    !Number.isFinite(start) ||
    (!cursor && !url.searchParams.has('start_time'))
  )
    return { status: 400, body: { error: 'InvalidValue', description: 'start_time or cursor is required' } };
  const changed = items
    .filter((item) => Date.parse(String(item.updated_at)) / 1000 >= startTime)
    .sort((a, b) => Date.parse(String(a.updated_at)) - Date.parse(String(b.updated_at)));
  const size = Math.min(Number(url.searchParams.get('per_page')) || 1000, zendesk.exportPageSize);
  const page = changed.slice(start, start + size);
  const after = Buffer.from(`${startTime}|${start + page.length}`).toString('base64url');
  const sideload =
    key === 'tickets' && url.searchParams.get('include') === 'metric_sets'
      ? { metric_sets: page.map((t) => ({ ticket_id: t.id, solved_at: t.__solved_at ?? null })) }
      : {};
  return {
    status: 200,
    body: {
      [key]: page.map(({ __solved_at, ...item }) => item),
      ...sideload,
      after_url: `${zendesk.url}${url.pathname}?cursor=${after}`,
      after_cursor: after,
      before_url: null,
      before_cursor: null,
      end_of_stream: start + size >= changed.length,
    },
  };
}

/** The made-up account: the docs' example shapes, a few of each, and the awkward ones (suspended, no e-mail, …). */
export function zendeskFixture(): ZendeskData {
  const user = (id: number, role: string, name: string, email: string | null, more: Json = {}) => ({
    id,
    url: `https://acme.zendesk.com/api/v2/users/${id}.json`,
    name,
    email,
    role,
    active: true,
    suspended: false,
    phone: null,
    organization_id: null,
    created_at: at('2024-01-02T10:00:00Z'),
    updated_at: at(`2024-01-${String(2 + (id % 20)).padStart(2, '0')}T10:00:00Z`),
    ...more,
  });
  return {
    users: [
      user(11, 'admin', 'Ada Admin', 'ada@acme.test'),
      user(12, 'agent', 'Bo Agent', 'bo@acme.test'),
      user(13, 'agent', 'Cy Suspended', 'cy@acme.test', { suspended: true }),
      user(21, 'end-user', 'Dee Customer', 'dee@customer.test', { organization_id: 501, phone: '+15550100' }),
      user(22, 'end-user', 'Eve Customer', 'eve@customer.test'),
      user(23, 'end-user', 'No Mail', null),
      user(24, 'end-user', 'Gone Customer', 'gone@customer.test', { active: false }),
    ],
    groups: [
      { id: 301, name: 'Support', deleted: false, created_at: at('2024-01-01T00:00:00Z') },
      { id: 302, name: 'Billing', deleted: false, created_at: at('2024-01-01T00:00:00Z') },
      { id: 303, name: 'Old team', deleted: true, created_at: at('2024-01-01T00:00:00Z') },
    ],
    groupMemberships: [
      { id: 1, user_id: 11, group_id: 301, default: true },
      { id: 2, user_id: 12, group_id: 301, default: true },
      { id: 3, user_id: 12, group_id: 302, default: false },
    ],
    organizations: [
      {
        id: 501,
        name: 'Customer Inc',
        domain_names: ['customer.test'],
        created_at: at('2024-01-01T00:00:00Z'),
      },
      { id: 502, name: 'Mail Users', domain_names: ['gmail.com', 'example.org'] },
      { id: 503, name: 'No Domains', domain_names: [] },
    ],
    ticketFields: [
      { id: 27642, type: 'text', title: 'Order Number', active: true },
      { id: 27648, type: 'checkbox', title: 'Refund requested?', active: true },
      { id: 27650, type: 'multiselect', title: 'Products', active: true },
    ],
    tickets: zendeskTickets(),
    comments: zendeskComments(),
  };
}

function zendeskTickets(): Json[] {
  const ticket = (id: number, status: string, priority: string | null, updated: string, more: Json = {}) => ({
    id,
    url: `https://acme.zendesk.com/api/v2/tickets/${id}.json`,
    subject: `Ticket ${id}`,
    raw_subject: `Ticket ${id}`,
    status,
    priority,
    type: 'question',
    requester_id: 21,
    submitter_id: 21,
    assignee_id: 12,
    group_id: 301,
    organization_id: 501,
    tags: ['enterprise'],
    custom_fields: [],
    via: { channel: 'web', source: { from: {}, to: {}, rel: null } },
    created_at: at('2024-02-01T09:00:00Z'),
    updated_at: at(updated),
    ...more,
  });
  return [
    ticket(1001, 'new', 'low', '2024-02-01T09:05:00Z', {
      custom_fields: [
        { id: 27642, value: '745' },
        { id: 27648, value: true },
        { id: 27650, value: ['widget', 'gadget'] },
        { id: 99999, value: 'unknown field' },
      ],
      via: { channel: 'email', source: { from: { address: 'dee@customer.test', name: 'Dee' }, to: {} } },
    }),
    ticket(1002, 'open', 'normal', '2024-02-02T09:00:00Z'),
    ticket(1003, 'pending', 'high', '2024-02-03T09:00:00Z'),
    ticket(1004, 'hold', 'urgent', '2024-02-04T09:00:00Z', { assignee_id: null, group_id: null }),
    ticket(1005, 'solved', null, '2024-02-05T09:00:00Z', { __solved_at: '2024-02-05T08:30:00Z' }),
    ticket(1006, 'closed', 'normal', '2024-02-06T09:00:00Z', { __solved_at: '2024-02-01T12:00:00Z' }),
    ticket(1007, 'deleted', 'normal', '2024-02-07T09:00:00Z'),
    ticket(1008, 'open', 'normal', '2024-02-08T09:00:00Z', { created_at: 'not a time' }),
  ];
}

function zendeskComments(): Record<string, Json[]> {
  const comment = (id: number, author: number, body: string, created: string, more: Json = {}) => ({
    id,
    type: 'Comment',
    author_id: author,
    body,
    html_body: `<p>${body}</p>`,
    plain_body: body,
    public: true,
    attachments: [],
    audit_id: id + 1,
    via: { channel: 'web', source: { from: {}, to: {}, rel: null } },
    metadata: { system: { client: 'Mozilla/5.0', ip_address: '1.1.1.1' }, custom: {} },
    created_at: at(created),
    ...more,
  });
  const simple = (ticket: number) => [comment(ticket * 10, 21, `Question ${ticket}`, '2024-02-01T09:00:00Z')];
  return {
    '1001': [
      comment(10010, 21, 'The printer is on fire.', '2024-02-01T09:00:00Z', {
        via: { channel: 'email', source: { from: { address: 'dee@customer.test' }, to: {}, rel: null } },
        metadata: { system: { message_id: '<CAF=abc123@mail.customer.test>' }, custom: {} },
        attachments: [
          {
            id: 498483,
            file_name: 'fire.png',
            content_url:
              'https://acme.zendesk.com/attachments/token/tyBq1ms40dFaHefSIigxZpwGg/?name=fire.png',
            content_type: 'image/png',
            size: 2532,
            inline: false,
          },
        ],
      }),
      comment(10011, 12, 'Internal: call the fire brigade.', '2024-02-01T09:02:00Z', { public: false }),
      comment(10012, 12, 'We are on it.', '2024-02-01T09:03:00Z'),
      comment(10013, 999, 'From a deleted user.', '2024-02-01T09:04:00Z'),
      comment(10014, 21, 'Before the epoch.', '1969-12-31T23:59:59Z'),
    ],
    '1002': simple(1002),
    '1003': simple(1003),
    '1004': simple(1004),
    '1005': simple(1005),
    '1006': simple(1006),
    '1008': simple(1008),
  };
}
