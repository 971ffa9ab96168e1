import { expect } from 'vitest';
import type { Gateway } from './http.ts';

type Body = Record<string, unknown>;

/** A valid POST /api/tickets body: a test spreads over it only what its scenario is about. */
export function ticketBody(fields: Body = {}): Body {
  return { subject: 'Help', description: 'Please', requester_email: 'c@client.test', ...fields };
}

/**
 * The ticket routes through a gateway, as a scenario reads them. `create` must answer 201 (it returns the ticket),
 * `update` 200 (the updated ticket); `get` and `patch` return the answer, whatever it is; `current` is the ticket
 * with its ETag; `list` reads up to 100 tickets of a query. Every create starts from `base`.
 */
export function ticketsThrough(gateway: Gateway, base: Body = ticketBody()) {
  const get = (key: string, ref: string) => gateway.call('GET', `/api/tickets/${ref}`, { key });
  const patch = (key: string, ref: string, body: unknown, headers: Record<string, string> = {}) =>
    gateway.call('PATCH', `/api/tickets/${ref}`, { key, body, headers });
  return {
    get,
    patch,
    async create(key: string, fields: Body = {}) {
      const response = await gateway.call('POST', '/api/tickets', { key, body: { ...base, ...fields } });
      expect(response.status, response.text).toBe(201);
      return response.body.ticket;
    },
    async update(key: string, ref: string, body: unknown) {
      const response = await patch(key, ref, body);
      expect(response.status, response.text).toBe(200);
      return response.body.ticket;
    },
    async current(key: string, ref: string) {
      const response = await get(key, ref);
      expect(response.status).toBe(200);
      return { ticket: response.body.data, etag: response.headers.get('etag') };
    },
    async list(key: string, query: string) {
      const response = await gateway.call('GET', `/api/tickets?per_page=100&${query}`, { key });
      expect(response.status, response.text).toBe(200);
      return {
        total: response.body.meta.total as number,
        uuids: response.body.data.map((t: { uuid: string }) => t.uuid) as string[],
        data: response.body.data,
      };
    },
  };
}

/** How many of `tickets` each assignee holds, by agent id (unassigned ones left out). */
export function assigneeCounts(tickets: { assignee: { id: number } | null }[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const t of tickets) if (t.assignee) counts[t.assignee.id] = (counts[t.assignee.id] ?? 0) + 1;
  return counts;
}
