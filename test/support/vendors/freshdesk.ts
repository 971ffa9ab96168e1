import type { IncomingMessage } from 'node:http';
import { nowMillis } from '#lib/time.ts';
import { type Answer, type RecordedRequest, startVendorServer, type VendorServer } from './server.ts';

/**
 * A local server speaking Freshdesk's API v2 (developers.freshdesk.com) for the import source's tests, with the
 * documented shapes and behaviour: Basic auth with the API key as user name (401 otherwise), `page`/`per_page`
 * lists (at most 100 a page, a `link` header to the next page), the tickets list capped at `pageCap` pages (a 400
 * past it, as Freshdesk answers past page 300), `updated_since` inclusive and `order_by=updated_at` ascending (ties
 * by id), `include=description,stats,requester`, `X-Ratelimit-Total`/`-Remaining` (per minute of the service's
 * clock), 429 with `Retry-After`, and a 5xx now and then. Archived tickets are in no list, and read by id only:
 * `GET /api/v2/tickets/archived/{id}` and its `/conversations` (paged), a 404 for an id not archived (a live one
 * included). Every request is recorded with its time on the clock.
 */
type Row = Record<string, unknown>;

export interface FreshdeskData {
  agents: Row[];
  groups: Row[];
  companies: Row[];
  contacts: Row[];
  /** Full tickets: `description`, `description_text`, `stats`, `attachments` as GET /tickets/{id} has them. */
  tickets: Row[];
  /**
   * Archived tickets (closed, left out of every list), as GET /tickets/archived/{id} has them; their conversations
   * in `conversations` too.
   */
  archived?: Row[];
  /** By ticket id. */
  conversations: Map<number, Row[]>;
  ticketFields: Row[];
}

export interface FreshdeskServerOptions {
  apiKey: string;
  data: FreshdeskData;
  /** The tickets list's last page (Freshdesk: 300). */
  pageCap?: number;
  /** Requests a minute (`X-Ratelimit-Total`). */
  ratePerMinute?: number;
  /** Every `failEvery`-th request (of the first 200) answers 503 (0: never), queued as the server's faults. */
  failEvery?: number;
}

const LISTS = { agents: 'agents', groups: 'groups', companies: 'companies', contacts: 'contacts' } as const;

function byUpdated(a: Row, b: Row): number {
  const d = String(a.updated_at).localeCompare(String(b.updated_at));
  return d !== 0 ? d : Number(a.id) - Number(b.id);
}

/** A ticket as the list answers it: no attachments, the description and stats only when included. */
function listed(ticket: Row, include: string[], data: FreshdeskData): Row {
  const { description, description_text, stats, attachments: _, ...rest } = ticket;
  const row: Row = { ...rest };
  if (include.includes('description')) Object.assign(row, { description, description_text });
  if (include.includes('stats')) row.stats = stats;
  if (include.includes('requester')) {
    const requester = data.contacts.find((c) => c.id === ticket.requester_id);
    row.requester = requester
      ? { id: requester.id, name: requester.name, email: requester.email, phone: requester.phone }
      : null;
  }
  return row;
}

/** The server (test/support/vendors/server.ts) with Freshdesk's routes. */
export async function startFreshdeskServer(options: FreshdeskServerOptions): Promise<VendorServer> {
  const { data, pageCap = 300, ratePerMinute = 200, failEvery = 0 } = options;
  const authorization = `Basic ${Buffer.from(`${options.apiKey}:X`).toString('base64')}`;
  /** The server's requests, once it is started (the rate headers count them). */
  let requests: RecordedRequest[] = [];
  const json = (status: number, body: unknown, headers: Record<string, string> = {}): Answer => {
    const now = nowMillis();
    const lastMinute = requests.filter((r) => r.at > now - 60_000).length;
    return {
      status,
      body,
      headers: {
        'x-ratelimit-total': String(ratePerMinute),
        'x-ratelimit-remaining': String(Math.max(0, ratePerMinute - lastMinute)),
        'x-ratelimit-used-currentrequest': '1',
        ...headers,
      },
    };
  };
  const paged = (url: URL, rows: Row[], cap = Number.POSITIVE_INFINITY): Answer => {
    const page = Number(url.searchParams.get('page') ?? '1');
    const perPage = Number(url.searchParams.get('per_page') ?? '30');
    if (!(perPage >= 1 && perPage <= 100) || !(page >= 1))
      return json(400, {
        description: 'Validation failed',
        errors: [{ field: 'page', code: 'invalid_value' }],
      });
    if (page > cap)
      return json(400, {
        description: 'Validation failed',
        errors: [
          {
            field: 'page',
            message: `You cannot access tickets beyond the ${cap}th page. Please provide a smaller page number.`,
            code: 'invalid_value',
          },
        ],
      });
    const more = rows.length > page * perPage && page < cap;
    const next = new URL(url);
    next.searchParams.set('page', String(page + 1));
    return json(
      200,
      rows.slice((page - 1) * perPage, page * perPage),
      more ? { link: `<${next.href}>; rel="next"` } : {},
    );
  };
  const route = (url: URL, request: IncomingMessage): Answer => {
    if (request.headers.authorization !== authorization)
      return json(401, {
        code: 'invalid_credentials',
        message: 'You have to be logged in to perform this action.',
      });
    const path = url.pathname;
    const list = /^\/api\/v2\/(agents|groups|companies|contacts)$/.exec(path)?.[1] as
      | keyof typeof LISTS
      | undefined;
    if (list) {
      const since = url.searchParams.get('_updated_since');
      if (list === 'contacts' && since)
        return paged(
          url,
          data.contacts.filter((c) => String(c.updated_at) >= since),
        );
      return paged(url, data[list]);
    }
    if (path === '/api/v2/ticket_fields') return json(200, data.ticketFields);
    if (path === '/api/v2/tickets') {
      const since = url.searchParams.get('updated_since');
      const include = (url.searchParams.get('include') ?? '').split(',');
      // Without updated_since, Freshdesk lists only the tickets created in the last 30 days.
      const from = since ?? `${new Date(nowMillis() - 30 * 86_400_000).toISOString().slice(0, 19)}Z`;
      const field = since ? 'updated_at' : 'created_at';
      const rows = data.tickets.filter((t) => String(t[field]) >= from).sort(byUpdated);
      return paged(
        url,
        rows.map((t) => listed(t, include, data)),
        pageCap,
      );
    }
    const one = /^\/api\/v2\/tickets\/(archived\/)?(\d+)(\/conversations)?$/.exec(path);
    const ticket =
      one && (one[1] ? (data.archived ?? []) : data.tickets).find((t) => t.id === Number(one[2]));
    if (!one || !ticket) return json(404, { code: 'not_found' });
    return one[3] ? paged(url, data.conversations.get(Number(one[2])) ?? []) : json(200, ticket);
  };
  const server = await startVendorServer(route);
  requests = server.requests;
  for (let n = 1; failEvery > 0 && n <= 200; n++)
    server.faults.push(
      n % failEvery === 0 ? { status: 503, body: { message: 'Service Unavailable' } } : null,
    );
  return server;
}
