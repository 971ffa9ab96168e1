import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';

/**
 * Random tickets, random list queries, and a plain in-memory model of the spec (decisions.md "Ticket list"):
 * filter with AND, search by word prefixes / reference / bare number / e-mail / domain, newest first,
 * paginate. Every answer must equal the model's, totals and page contents included.
 */
const WORDS = ['invoice', 'inv', 'login', 'refund', 'portal', 'e-mail', 'march,', 'x1'];
const EMAILS = ['ann@example.com', 'bob@corp.test', 'carl@example.com'];

interface Created {
  reference: string;
  subject: string;
  priority: string;
  status: string;
  requester: { email: string };
  assignee: { id: number } | null;
  custom_fields: Record<string, unknown>;
  created_at: string;
}

const ticketArb = fc.record({
  subject: fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 4 }).map((w) => w.join(' ')),
  requester_email: fc.constantFrom(...EMAILS),
  priority: fc.constantFrom('low', 'medium', 'high', 'urgent'),
  custom_fields: fc.record(
    { plan: fc.constantFrom('gold', 'silver'), seats: fc.constantFrom(1, 2, '2', true) },
    { requiredKeys: [] },
  ),
});

const queryArb = fc.record(
  {
    status: fc.constantFrom('open', 'closed'),
    priority: fc.constantFrom('low', 'medium', 'high', 'urgent'),
    assignee: fc.constantFrom(0, 1, 2),
    requester_email: fc.constantFrom(...EMAILS, 'ANN@EXAMPLE.COM', 'nobody@x.test'),
    plan: fc.constantFrom('gold', 'silver', 'Gold'),
    seats: fc.constantFrom('1', '2', 'true'),
    search: fc
      .array(
        fc.constantFrom(
          'inv',
          'invoice',
          'log',
          'e-mail',
          'march',
          'x',
          'ann@',
          'corp',
          'example.com',
          'tkt-00',
          '1',
          '3',
          'zzz',
        ),
        {
          minLength: 1,
          maxLength: 2,
        },
      )
      .map((w) => w.join(' ')),
  },
  { requiredKeys: [] },
);

function subjectWords(subject: string): string[] {
  const words: string[] = [];
  for (const token of subject.toLowerCase().split(/\s+/)) {
    const trimmed = token.replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
    if (!trimmed) continue;
    words.push(trimmed, ...trimmed.split(/[^a-z0-9]+/).filter(Boolean));
  }
  return words;
}

function wordMatches(t: Created, word: string): boolean {
  const email = t.requester.email.toLowerCase();
  const number = Number(t.reference.split('-')[1]);
  return (
    subjectWords(t.subject).some((w) => w.startsWith(word)) ||
    t.reference.toLowerCase().startsWith(word) ||
    (/^\d+$/.test(word) && Number(word) === number) ||
    email.startsWith(word) ||
    email.slice(email.indexOf('@') + 1).startsWith(word)
  );
}

function model(tickets: Created[], q: Record<string, string>) {
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  return tickets
    .filter((t) => !q.status || t.status === q.status)
    .filter((t) => !q.priority || t.priority === q.priority)
    .filter((t) => !q.assignee_id || t.assignee?.id === Number(q.assignee_id))
    .filter((t) => !q.requester_email || t.requester.email.toLowerCase() === q.requester_email.toLowerCase())
    .filter(
      (t) =>
        !q['custom_fields[plan]'] ||
        ('plan' in t.custom_fields && text(t.custom_fields.plan) === q['custom_fields[plan]']),
    )
    .filter(
      (t) =>
        !q['custom_fields[seats]'] ||
        ('seats' in t.custom_fields && text(t.custom_fields.seats) === q['custom_fields[seats]']),
    )
    .filter(
      (t) =>
        !q.search ||
        q.search
          .toLowerCase()
          .split(/\s+/)
          .every((w) => wordMatches(t, w)),
    )
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.reference.localeCompare(a.reference));
}

describe('ticket list against a model of the spec', () => {
  it('answers every query exactly as the model does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(ticketArb, { minLength: 1, maxLength: 14 }),
        fc.array(fc.tuple(queryArb, fc.integer({ min: 1, max: 4 }), fc.constantFrom(1, 2, 5, 15)), {
          minLength: 6,
          maxLength: 12,
        }),
        async (inputs, queries) => {
          const account = await createTestAccount({
            auto_assignment: { enabled: true, method: 'round_robin' },
            agents: [
              { email: 'a1@d.test', name: 'A1' },
              { email: 'a2@d.test', name: 'A2' },
            ],
          });
          const caller = callerOf(account);
          const created: Created[] = [];
          for (const input of inputs) {
            const response = await createTicket(
              proxyEvent({
                method: 'POST',
                path: '/api/tickets',
                caller,
                body: { ...input, description: 'd' },
              }),
              lambdaContext,
            );
            created.push(JSON.parse(response.body).ticket);
          }
          const agentIds = account.agents.map((a) => a.id);
          for (const [filters, page, perPage] of queries) {
            const query: Record<string, string> = { page: String(page), per_page: String(perPage) };
            if (filters.status) query.status = filters.status;
            if (filters.priority) query.priority = filters.priority;
            if (filters.assignee !== undefined)
              query.assignee_id = String(agentIds[filters.assignee] ?? 999999);
            if (filters.requester_email) query.requester_email = filters.requester_email;
            if (filters.plan) query['custom_fields[plan]'] = filters.plan;
            if (filters.seats) query['custom_fields[seats]'] = filters.seats;
            if (filters.search) query.search = filters.search;

            const response = await listTickets(
              proxyEvent({ path: '/api/tickets', caller, query }),
              lambdaContext,
            );
            const body = JSON.parse(response.body);
            const expected = model(created, query);
            const slice = expected.slice((page - 1) * perPage, page * perPage);
            expect(body.meta.total, JSON.stringify(query)).toBe(expected.length);
            expect(body.meta.last_page).toBe(Math.max(1, Math.ceil(expected.length / perPage)));
            expect(
              body.data.map((t: Created) => t.reference),
              JSON.stringify(query),
            ).toEqual(slice.map((t) => t.reference));
          }
        },
      ),
      { numRuns: 12 },
    );
  });
});
