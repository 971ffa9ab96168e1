import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as getTicket } from '#functions/tickets-get.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import {
  applyPatch,
  expectedOf,
  leastBusy,
  listed,
  type Modelled,
  PRIORITIES,
  type ShownTicket as Shown,
  STATUSES,
  shownOf,
} from '#test/support/ticket-model.ts';

/**
 * Random creates and random PATCHes, applied both to the service and to a plain in-memory model of the spec
 * (decisions.md "Ticket list", "Automatic assignment" and "One ticket: read and update"): closed is final,
 * entering resolved sets resolved_at, leaving it reopens, custom fields merge key by key (null removes), a
 * PATCH that changes nothing writes nothing, least-busy counts open work as it now is. Then random list
 * queries (filters with AND, search by word prefixes / reference / bare number / e-mail / domain, newest
 * first, pages): every answer must equal the model's, totals and page contents included.
 */
const WORDS = ['invoice', 'inv', 'login', 'refund', 'portal', 'e-mail', 'march,', 'x1'];
const EMAILS = ['ann@example.com', 'bob@corp.test', 'carl@example.com'];

const subjectArb = fc
  .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 4 })
  .map((w) => w.join(' '));

const ticketArb = fc.record({
  subject: subjectArb,
  requester_email: fc.constantFrom(...EMAILS),
  priority: fc.constantFrom(...PRIORITIES),
  custom_fields: fc.record(
    { plan: fc.constantFrom('gold', 'silver'), seats: fc.constantFrom(1, 2, '2', true) },
    { requiredKeys: [] },
  ),
});

/** Any subset of the fields (none at all included: a 422). `assignee` is an index among the agents, or null. */
const patchArb = fc.record(
  {
    status: fc.constantFrom(...STATUSES),
    priority: fc.constantFrom(...PRIORITIES),
    assignee: fc.constantFrom(0, 1, 2, null),
    custom_fields: fc.record(
      {
        plan: fc.constantFrom('gold', 'silver', null),
        seats: fc.constantFrom(1, 2, '2', true, null),
      },
      { requiredKeys: [] },
    ),
    subject: subjectArb,
  },
  { requiredKeys: [] },
);

const commandArb = fc.oneof(
  ticketArb.map((input) => ({ kind: 'create' as const, input })),
  fc.record({
    kind: fc.constant('patch' as const),
    target: fc.nat(),
    by: fc.constantFrom('uuid', 'reference', 'lower-case reference'),
    patch: patchArb,
  }),
);

const queryArb = fc.record(
  {
    status: fc.constantFrom(...STATUSES),
    priority: fc.constantFrom(...PRIORITIES),
    assignee: fc.constantFrom(0, 1, 2, 3),
    requester_email: fc.constantFrom(...EMAILS, 'ANN@EXAMPLE.COM', 'nobody@x.test'),
    plan: fc.constantFrom('gold', 'silver', 'Gold'),
    seats: fc.constantFrom('1', '2', 'true'),
    search: fc
      .array(
        fc.constantFrom(
          'inv',
          'invoice',
          'log',
          'refund',
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

describe('tickets against a model of the spec', () => {
  it('answers every create, PATCH, GET and list query exactly as the model does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(commandArb, { minLength: 1, maxLength: 14 }),
        fc.array(fc.tuple(queryArb, fc.integer({ min: 1, max: 4 }), fc.constantFrom(1, 2, 5, 15)), {
          minLength: 6,
          maxLength: 12,
        }),
        async (commands, queries) => {
          const account = await createTestAccount({
            auto_assignment: { enabled: true, method: 'least_busy' },
            agents: [
              { email: 'a1@d.test', name: 'A1' },
              { email: 'a2@d.test', name: 'A2' },
              { email: 'a3@d.test', name: 'A3' },
            ],
          });
          const caller = callerOf(account);
          const agentIds = account.agents.map((a) => a.id);
          const tickets: Modelled[] = [];
          const etags = new Map<string, string>();

          for (const command of commands) {
            if (command.kind === 'create') {
              const expectedAssignee = leastBusy(tickets, agentIds);
              const response = await createTicket(
                proxyEvent({
                  method: 'POST',
                  path: '/api/tickets',
                  caller,
                  body: { ...command.input, description: 'd' },
                }),
                lambdaContext,
              );
              expect(response.statusCode, response.body).toBe(201);
              const shown: Shown = JSON.parse(response.body).ticket;
              const created: Modelled = {
                uuid: shown.uuid,
                reference: shown.reference,
                email: command.input.requester_email,
                createdAt: shown.created_at,
                updatedAt: shown.updated_at,
                subject: command.input.subject,
                priority: command.input.priority,
                status: 'open',
                assigneeId: expectedAssignee,
                customFields: { ...command.input.custom_fields },
                resolved: false,
                closed: false,
              };
              expect(shownOf(shown), 'create (least-busy assignee)').toEqual(expectedOf(created));
              tickets.push(created);
              continue;
            }

            const { patch, by } = command;
            const body: Record<string, unknown> = {};
            if (patch.status !== undefined) body.status = patch.status;
            if (patch.priority !== undefined) body.priority = patch.priority;
            if (patch.assignee !== undefined)
              body.assignee_id = patch.assignee === null ? null : agentIds[patch.assignee];
            if (patch.custom_fields !== undefined) body.custom_fields = patch.custom_fields;
            if (patch.subject !== undefined) body.subject = patch.subject;
            const index = command.target % tickets.length;
            const before = tickets[index];
            if (!before) continue;
            const ref =
              by === 'uuid'
                ? before.uuid
                : by === 'reference'
                  ? before.reference
                  : before.reference.toLowerCase();
            const response = await updateTicket(ticketEvent('PATCH', ref, caller, body), lambdaContext);
            const label = `PATCH ${before.reference} (${before.status}) ${JSON.stringify(body)}`;
            if (Object.keys(body).length === 0 || before.closed) {
              // Nothing to change, or closed is final: 422 and the model stays as it is.
              expect(response.statusCode, `${label}: ${response.body}`).toBe(422);
              if (before.closed && Object.keys(body).length > 0) {
                expect(Object.keys(JSON.parse(response.body).errors), label).toContain('status');
              }
              continue;
            }
            expect(response.statusCode, `${label}: ${response.body}`).toBe(200);
            const shown: Shown = JSON.parse(response.body).ticket;
            const after = applyPatch(before, body);
            expect(shownOf(shown), label).toEqual(expectedOf(after));
            if (isDeepStrictEqual(after, before)) {
              expect(shown.updated_at, `${label}: changes nothing, writes nothing`).toBe(before.updatedAt);
            } else {
              expect(shown.updated_at > before.updatedAt, `${label}: updated_at moves`).toBe(true);
            }
            after.updatedAt = shown.updated_at;
            tickets[index] = after;
            etags.set(after.uuid, response.headers?.ETag as string);
          }

          // Every ticket reads back as the model has it, with the ETag of its last PATCH.
          for (const [i, t] of tickets.entries()) {
            const ref = i % 2 === 0 ? t.uuid : t.reference.toLowerCase();
            const response = await getTicket(ticketEvent('GET', ref, caller), lambdaContext);
            expect(response.statusCode, `GET ${ref}`).toBe(200);
            const shown: Shown = JSON.parse(response.body).data;
            expect({ ...shownOf(shown), updated_at: shown.updated_at }, `GET ${ref}`).toEqual({
              ...expectedOf(t),
              updated_at: t.updatedAt,
            });
            const etag = etags.get(t.uuid);
            if (etag !== undefined) expect(response.headers?.ETag, `GET ${ref} ETag`).toBe(etag);
          }

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
            const expected = listed(tickets, query);
            const slice = expected.slice((page - 1) * perPage, page * perPage);
            const label = JSON.stringify(query);
            expect(body.meta?.total, label).toBe(expected.length);
            expect(body.meta.last_page, label).toBe(Math.max(1, Math.ceil(expected.length / perPage)));
            expect(body.data.map(shownOf), label).toEqual(slice.map(expectedOf));
          }
        },
      ),
      // A failure shrinks for at most a minute, then reports the smallest counterexample found so far.
      { numRuns: 12, interruptAfterTimeLimit: 60_000 },
    );
  }, 120_000);
});
