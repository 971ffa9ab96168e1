import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { getTicketStats } from '#lib/data/tickets/tickets.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import { withFault } from '#test/support/faults.ts';

/**
 * A change that keeps losing to concurrent ones on a hot item (an agent's cell at 64 writers: docs/capacity.md,
 * "Contention, measured") is decided again until its request's deadline, not for a fixed number of tries: a
 * losing streak longer than the 25 tries before still lands, once, with its totals exact at once. The request is
 * given 60 s (a Lambda context's remaining time) so that the machine's speed decides nothing here; the backoff's
 * own bound within the 8.5 s deadline is test/unit/conflict-backoff.test.ts's.
 */
const STREAK = 30;
const roomy = { ...lambdaContext, getRemainingTimeInMillis: () => 60_000 } as Context;

async function setUp() {
  const account = await createTestAccount({
    auto_assignment: { enabled: true, method: 'round_robin' },
    agents: [
      { email: 'a@streak.test', name: 'A' },
      { email: 'b@streak.test', name: 'B' },
    ],
  });
  const caller = callerOf(account);
  const post = (context = lambdaContext) =>
    createTicket(
      proxyEvent({
        method: 'POST',
        path: '/api/tickets',
        caller,
        body: { subject: 'Hot agent', description: 'd', requester_email: 'r@streak.test' },
      }),
      context,
    );
  const total = async (query: Record<string, string>) => {
    const page = await listTickets(proxyEvent({ path: '/api/tickets', caller, query }), lambdaContext);
    return JSON.parse(page.body).meta.total as number;
  };
  return { account, caller, post, total };
}

describe('a commit that meets a long run of conflicts', () => {
  it(`a PATCH cancelled ${STREAK} times in a row lands once, its lists and the agents' open work exact`, async () => {
    const { account, caller, post, total } = await setUp();
    const created = JSON.parse((await post()).body).ticket;
    const [a, b] = account.agents.map((agent) => agent.id);
    const other = created.assignee.id === a ? b : a;
    const { result, operations } = await withFault(
      { operation: 'TransactWriteItems', mode: 'conflict', times: STREAK },
      () =>
        updateTicket(
          ticketEvent('PATCH', created.uuid, caller, { status: 'pending', assignee_id: other }),
          roomy,
        ),
    );
    expect(result.statusCode, result.body).toBe(200);
    expect(operations.filter((o) => o === 'TransactWriteItems')).toHaveLength(STREAK + 1);
    expect(JSON.parse(result.body).ticket).toMatchObject({ status: 'pending', assignee: { id: other } });
    expect(await total({ status: 'pending' })).toBe(1);
    expect(await total({ status: 'open' })).toBe(0);
    expect(await total({ assignee_id: String(other) })).toBe(1);
    const busy = (await getTicketStats(account.accountId)).busy;
    expect([busy[created.assignee.id] ?? 0, busy[other ?? 0]]).toEqual([0, 1]);
  });

  it(`a create cancelled ${STREAK} times in a row lands once, with one number and one assignee`, async () => {
    const { account, post, total } = await setUp();
    const { result, operations } = await withFault(
      { operation: 'TransactWriteItems', mode: 'conflict', times: STREAK },
      () => post(roomy),
    );
    expect(result.statusCode, result.body).toBe(201);
    expect(operations.filter((o) => o === 'TransactWriteItems')).toHaveLength(STREAK + 1);
    const ticket = JSON.parse(result.body).ticket;
    expect(ticket.reference).toBe('TKT-000001');
    expect(await total({})).toBe(1);
    const busy = (await getTicketStats(account.accountId)).busy;
    expect(Object.values(busy).reduce((sum, n) => sum + n, 0)).toBe(1);
    expect(busy[ticket.assignee.id]).toBe(1);
  });
});
