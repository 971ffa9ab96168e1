import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handler as listEvents } from '#functions/events-list.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as getTicket } from '#functions/tickets-get.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import {
  applyPatch,
  expectedOf,
  leastBusy,
  listed,
  type ModelEvent,
  type Modelled,
  PRIORITIES,
  type ShownTicket as Shown,
  STATUSES,
  settleTimestamps,
  shownOf,
  ticketEventOf,
  ticketView,
} from '#test/support/ticket-model.ts';

/**
 * Random creates and random PATCHes, applied both to the service and to a plain in-memory model of the spec
 * (decisions.md "Ticket list", "Automatic assignment" and "One ticket: read and update"): closed is final,
 * entering resolved sets resolved_at, leaving it reopens, custom fields merge key by key (null removes), a
 * PATCH that changes nothing writes nothing, least-busy counts open work as it now is; and refused PATCHes (a
 * bad value, an unknown agent, a stale If-Match, an unknown ticket). Then random list queries (filters with AND,
 * search by word prefixes / reference / bare number / e-mail / domain, newest first, pages): every answer must
 * equal the model's, totals and page contents included. Last, the account's events feed, read to its end a
 * few events a page (decisions.md, "Events"): one event per create and per PATCH that changed something, in
 * the order of the commands, each with the type, the ticket, the version and the `previous` (the changed
 * fields of the GET answer, with their values before) that the model predicts from its own state; no event
 * for an unchanged or refused PATCH.
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

/** A PATCH the service must refuse whole: its status, and the body and headers that make it so. */
const REFUSALS = {
  'bad priority': { status: 422, body: { priority: 'soonish' } },
  'unknown agent': { status: 422, body: { assignee_id: 999_999 } },
  'stale If-Match': { status: 412, body: { priority: 'urgent', subject: 'Stale' } },
  'unknown ticket': { status: 404, body: { priority: 'urgent' } },
} as const;

const commandArb = fc.oneof(
  ticketArb.map((input) => ({ kind: 'create' as const, input })),
  fc.record({
    kind: fc.constant('patch' as const),
    target: fc.nat(),
    by: fc.constantFrom('uuid', 'reference', 'lower-case reference'),
    patch: patchArb,
  }),
  // The ticket's own values sent again (some of its fields): a PATCH that changes nothing.
  fc.record({
    kind: fc.constant('unchanged' as const),
    target: fc.nat(),
    by: fc.constant('uuid' as const),
    fields: fc.subarray(['status', 'priority', 'assignee_id', 'custom_fields', 'subject'], { minLength: 1 }),
  }),
  fc.record({
    kind: fc.constant('refused' as const),
    target: fc.nat(),
    how: fc.constantFrom(...(Object.keys(REFUSALS) as (keyof typeof REFUSALS)[])),
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

/** GET /api/events in-process, as readFeedToEnd calls it over HTTP. */
const feedCall =
  (caller: ReturnType<typeof callerOf>) =>
  async (_method: string, path: string): Promise<{ status: number; body: unknown; text: string }> => {
    const url = new URL(path, 'https://api.test');
    const query: Record<string, string[]> = {};
    for (const [k, v] of url.searchParams) query[k] = [...(query[k] ?? []), v];
    const answer = await listEvents(proxyEvent({ path: url.pathname, caller, query }), lambdaContext);
    return { status: answer.statusCode, body: JSON.parse(answer.body), text: answer.body };
  };

/** What the test compares of an event: what the model predicts, and the ticket's fields the model knows. */
const eventShape = (e: FeedEvent) => {
  const object = e.data.object as Record<string, unknown> & {
    assignee: { id: number; name: string; email: string } | null;
  };
  return {
    type: e.type,
    uuid: object.uuid,
    version: e.data.version,
    ...(e.data.previous !== undefined ? { previous: e.data.previous } : {}),
    object: {
      uuid: object.uuid,
      reference: object.reference,
      subject: object.subject,
      status: object.status,
      priority: object.priority,
      assignee: object.assignee && {
        id: object.assignee.id,
        name: object.assignee.name,
        email: object.assignee.email,
      },
      custom_fields: object.custom_fields,
      created_at: object.created_at,
      updated_at: object.updated_at,
      resolved_at: object.resolved_at,
      closed_at: object.closed_at,
      status_changed_at: object.status_changed_at,
    },
  };
};
const modelShape = (e: ModelEvent & { object: Record<string, unknown> }) => ({
  type: e.type,
  uuid: e.uuid,
  version: e.version,
  ...(e.previous !== undefined ? { previous: e.previous } : {}),
  object: e.object,
});

/** Events grouped by their object, each group in feed order, the groups in the order of their uuids. */
function perObject<T extends { uuid: unknown }>(events: T[]): [string, T[]][] {
  const groups = new Map<string, T[]>();
  for (const e of events) groups.set(String(e.uuid), [...(groups.get(String(e.uuid)) ?? []), e]);
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
}

describe('tickets against a model of the spec', () => {
  it('answers every create, PATCH, GET and list query exactly as the model does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(commandArb, { minLength: 1, maxLength: 14 }),
        fc.array(fc.tuple(queryArb, fc.integer({ min: 1, max: 4 }), fc.constantFrom(1, 2, 5, 15)), {
          minLength: 6,
          maxLength: 12,
        }),
        fc.constantFrom(1, 3, 100),
        async (commands, queries, feedLimit) => {
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
          const agents = account.agents.map((a) => ({ id: a.id, name: a.name, email: a.email }));
          const tickets: Modelled[] = [];
          const etags = new Map<string, string>();
          // The events the model predicts, in command order, each with the ticket as it was after its change.
          const predicted: (ModelEvent & { object: Record<string, unknown> })[] = [];
          const predict = (before: Modelled | undefined, after: Modelled) => {
            const event = ticketEventOf(before, after, agents);
            if (event) predicted.push({ ...event, object: ticketView(after, agents) });
          };

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
                resolvedAt: null,
                closedAt: null,
                // A new ticket's status changed when it was made.
                statusChangedAt: shown.created_at,
                version: 1,
              };
              expect(shownOf(shown), 'create (least-busy assignee)').toEqual(expectedOf(created));
              tickets.push(created);
              predict(undefined, created);
              continue;
            }

            if (command.kind === 'refused') {
              // Refused whole: no change, no event. The unknown ticket is a well-formed reference no ticket has.
              const target = tickets[command.target % Math.max(1, tickets.length)];
              const { status, body } = REFUSALS[command.how];
              const ref = command.how === 'unknown ticket' || !target ? 'TKT-999999' : target.uuid;
              const event = ticketEvent('PATCH', ref, caller, body);
              if (command.how === 'stale If-Match')
                event.headers['If-Match'] = `"${(target?.version ?? 0) + 7}"`;
              const response = await updateTicket(event, lambdaContext);
              // Without a ticket to target, every refusal is a 404: the object the path names answers before the
              // body (decisions.md, "Errors").
              const expected = target ? status : 404;
              expect(response.statusCode, `${command.how}: PATCH ${ref}: ${response.body}`).toBe(expected);
              continue;
            }

            const { by } = command;
            const index = command.target % tickets.length;
            const before = tickets[index];
            if (!before) continue;
            const body: Record<string, unknown> = {};
            if (command.kind === 'unchanged') {
              const now: Record<string, unknown> = {
                status: before.status,
                priority: before.priority,
                assignee_id: before.assigneeId,
                custom_fields: before.customFields,
                subject: before.subject,
              };
              for (const field of command.fields) body[field] = now[field];
            } else {
              const { patch } = command;
              if (patch.status !== undefined) body.status = patch.status;
              if (patch.priority !== undefined) body.priority = patch.priority;
              if (patch.assignee !== undefined)
                body.assignee_id = patch.assignee === null ? null : agentIds[patch.assignee];
              if (patch.custom_fields !== undefined) body.custom_fields = patch.custom_fields;
              if (patch.subject !== undefined) body.subject = patch.subject;
            }
            const ref =
              by === 'uuid'
                ? before.uuid
                : by === 'reference'
                  ? before.reference
                  : before.reference.toLowerCase();
            const response = await updateTicket(ticketEvent('PATCH', ref, caller, body), lambdaContext);
            const label = `PATCH ${before.reference} (${before.status}) ${JSON.stringify(body)}`;
            if (Object.keys(body).length === 0 || before.closedAt !== null) {
              // Nothing to change, or closed is final: 422 and the model stays as it is.
              expect(response.statusCode, `${label}: ${response.body}`).toBe(422);
              if (before.closedAt !== null && Object.keys(body).length > 0) {
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
            expect(settleTimestamps(after, shown), `${label}: timestamps`).toEqual([]);
            expect(response.headers?.ETag, `${label}: ETag`).toBe(`"${after.version}"`);
            tickets[index] = after;
            etags.set(after.uuid, response.headers?.ETag as string);
            predict(before, after);
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

          // The feed, read to its end `feedLimit` events a page: the model's events, each ticket's in command
          // order (decisions.md promises each object's order; tickets in different feed shards interleave freely).
          const { events } = await readFeedToEnd(feedCall(caller), account.apiKey, {
            limit: feedLimit,
            // The account file's agents have theirs (agent.created): the model predicts the tickets'.
            types: ['ticket.*'],
          });
          expect(perObject(events.map(eventShape)), 'the events feed').toEqual(
            perObject(predicted.map(modelShape)),
          );
        },
      ),
      // A failure shrinks for at most a minute, then reports the smallest counterexample found so far.
      { numRuns: 12, interruptAfterTimeLimit: 60_000 },
    );
  }, 120_000);
});
