import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as updateAgent } from '#functions/agents-update.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { eventShardOfObject, readFeed, settleEventPlaces, takeShardPlaces } from '#lib/data/events.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { getTicketStats } from '#lib/data/tickets/tickets.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, routeEvent, ticketEvent } from '#test/support/events.ts';
import { withFault } from '#test/support/faults.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';

/**
 * A commit cancelled by a conflict is sent again as it is (lib/data/index/write-plan.ts): whatever lands between the
 * cancelled send and the resend must make the resend refused, never written over (the version read, the pick's
 * condition on the agent's cell, the event's place). Each case cancels the first send, lands a change before the
 * resend (beforeCallOnce on the second send), and checks the ticket, its lists, the agents' open work and the feed.
 */

/**
 * Runs `work` just before the resend of the first commit naming `needle`. The fault that cancels the first send and
 * the hook both sit on the client: when the fault's middleware runs first, the hook never sees the cancelled send.
 */
async function landBeforeResend(needle: string, work: () => Promise<unknown>): Promise<void> {
  await withFault(undefined, async () => {});
  beforeCallOnce('NoCommand', 'none', async () => {});
  const names = dynamo.middlewareStack.identify();
  const hookSeesFirst =
    names.findIndex((n) => n.startsWith('beforeCallOnce')) <
    names.findIndex((n) => n.startsWith('injectedFaults'));
  let seen = 0;
  beforeCallOnce(
    'TransactWriteItemsCommand',
    (input) => JSON.stringify(input).includes(needle) && ++seen === (hookSeesFirst ? 2 : 1),
    work,
  );
}

const conflictOnce = { operation: 'TransactWriteItems', mode: 'conflict' } as const;
const commits = (operations: string[]) => operations.filter((o) => o === 'TransactWriteItems').length;

async function setUp(file: Record<string, unknown> = {}) {
  const account = await createTestAccount(file);
  const caller = callerOf(account);
  const post = async (body: Record<string, unknown> = {}) => {
    const answer = await createTicket(
      proxyEvent({
        method: 'POST',
        path: '/api/tickets',
        caller,
        body: { subject: 'Resent', description: 'd', requester_email: 'r@resend.test', ...body },
      }),
      lambdaContext,
    );
    expect(answer.statusCode, answer.body).toBe(201);
    return JSON.parse(answer.body).ticket;
  };
  const patch = (uuid: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const event = ticketEvent('PATCH', uuid, caller, body);
    const withHeaders: APIGatewayProxyEvent = {
      ...event,
      headers: { ...event.headers, ...headers },
      multiValueHeaders: {
        ...event.multiValueHeaders,
        ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      },
    };
    return updateTicket(withHeaders, lambdaContext);
  };
  const total = async (query: Record<string, string>) => {
    const page = await listTickets(proxyEvent({ path: '/api/tickets', caller, query }), lambdaContext);
    return JSON.parse(page.body).meta.total as number;
  };
  /** The feed's events of one ticket, in feed order. */
  const eventsOf = async (uuid: string) => {
    const { events } = await readFeed(account.accountId, { limit: 100, matches: () => true });
    return events.filter((e) => (e.data.object as { uuid?: string }).uuid === uuid);
  };
  return { account, caller, post, patch, total, eventsOf };
}

describe('a cancelled commit resent after another change landed', () => {
  it('of the same ticket: the resend is refused by the version read and the PATCH decided again, both changes kept', async () => {
    const { post, patch, total, eventsOf } = await setUp();
    const ticket = await post();
    await landBeforeResend(ticket.uuid, async () => {
      const moved = await patch(ticket.uuid, { status: 'pending' });
      expect(moved.statusCode, moved.body).toBe(200);
    });
    const { result, operations } = await withFault(conflictOnce, () =>
      patch(ticket.uuid, { priority: 'urgent' }),
    );
    expect(result.statusCode, result.body).toBe(200);
    // Cancelled, the other PATCH's, the resend refused, the change decided again.
    expect(commits(operations)).toBe(4);
    expect(JSON.parse(result.body).ticket).toMatchObject({ status: 'pending', priority: 'urgent' });
    expect(result.headers?.ETag).toBe('"3"');
    expect([await total({ status: 'pending' }), await total({ status: 'open' })]).toEqual([1, 0]);
    expect(await total({ priority: 'urgent' })).toBe(1);
    const updated = (await eventsOf(ticket.uuid)).filter((e) => e.type === 'ticket.updated');
    expect(updated.map((e) => e.data.version)).toEqual([2, 3]);
    expect(updated[0]?.data.previous).toMatchObject({ status: 'open' });
    expect(updated[1]?.data.previous).toMatchObject({ priority: ticket.priority });
    expect(updated[1]?.data.previous).not.toHaveProperty('status');
  });

  it('of the same ticket, with If-Match on the version first read: 412, and only the change that landed', async () => {
    const { post, patch, total, eventsOf } = await setUp();
    const ticket = await post();
    await landBeforeResend(ticket.uuid, () => patch(ticket.uuid, { status: 'pending' }));
    const { result, operations } = await withFault(conflictOnce, () =>
      patch(ticket.uuid, { priority: 'urgent' }, { 'If-Match': '"1"' }),
    );
    expect(result.statusCode, result.body).toBe(412);
    expect(commits(operations)).toBe(3);
    expect(await total({ priority: 'urgent' })).toBe(0);
    const updated = (await eventsOf(ticket.uuid)).filter((e) => e.type === 'ticket.updated');
    expect(updated.map((e) => e.data.version)).toEqual([2]);
  });

  it("a create's pick of an agent whose last place a hand assignment took meanwhile: refused, decided again, never over capacity", async () => {
    const { account, caller, post, patch, total } = await setUp({
      auto_assignment: { enabled: true, method: 'round_robin' },
      agents: [
        { email: 'full@resend.test', name: 'Full' },
        { email: 'gone@resend.test', name: 'Gone', active: false },
      ],
    });
    const [full] = account.agents.map((a) => a.id);
    const capped = await updateAgent(
      routeEvent('PATCH', '/api/agents/{agent}', { agent: String(full) }, caller, { capacity: 1 }),
      lambdaContext,
    );
    expect(capped.statusCode, capped.body).toBe(200);
    const first = await post();
    expect(first.assignee?.id).toBe(full);
    expect((await patch(first.uuid, { assignee_id: null })).statusCode).toBe(200);
    // The create picks `full` (the only candidate, below capacity); before its resend, a PATCH gives them `first`.
    await landBeforeResend('Second of two', async () => {
      const back = await patch(first.uuid, { assignee_id: full });
      expect(back.statusCode, back.body).toBe(200);
    });
    const { result: second, operations } = await withFault(conflictOnce, () =>
      post({ subject: 'Second of two' }),
    );
    expect(commits(operations)).toBe(4);
    expect(second.reference).toBe('TKT-000002');
    expect(second.assignee).toBeNull();
    expect((await getTicketStats(account.accountId)).busy[full as number]).toBe(1);
    expect(await total({ assignee_id: String(full) })).toBe(1);
    expect(await total({ assignee: 'unassigned' })).toBe(1);
  });

  it("whose event's place a reader closed meanwhile: the resend is refused, the change lands once with a new place", async () => {
    const { account, post, patch, eventsOf } = await setUp();
    const ticket = await post();
    const shard = eventShardOfObject(ticket, 'ticket.updated');
    await landBeforeResend(ticket.uuid, async () => {
      // A later place of the ticket's lane settled, and a reader that does not wait for the PATCH's place (older than
      // the settle window, here 0): it closes it as a dead writer's.
      await settleEventPlaces(account.accountId, await takeShardPlaces(account.accountId, shard, 1));
      const settle = process.env.EVENT_SETTLE_MS;
      process.env.EVENT_SETTLE_MS = '0';
      try {
        await readFeed(account.accountId, { limit: 100, matches: () => true });
      } finally {
        if (settle === undefined) delete process.env.EVENT_SETTLE_MS;
        else process.env.EVENT_SETTLE_MS = settle;
      }
    });
    const { result, operations } = await withFault(conflictOnce, () =>
      patch(ticket.uuid, { priority: 'urgent' }),
    );
    expect(result.statusCode, result.body).toBe(200);
    // Cancelled, the resend refused on the closed place, the change decided again with a new one.
    expect(commits(operations)).toBe(3);
    expect(result.headers?.ETag).toBe('"2"');
    const events = await eventsOf(ticket.uuid);
    expect(events.map((e) => [e.type, e.data.version])).toEqual([
      ['ticket.created', 1],
      ['ticket.updated', 2],
    ]);
  });
});
