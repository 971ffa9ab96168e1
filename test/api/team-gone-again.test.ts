import { describe, expect, it } from 'vitest';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';
import { ticketsThrough } from '#test/support/tickets.ts';

/**
 * A reopen that meets its team's deletion is decided again (lib/tickets/team-gone.ts): with an Idempotency-Key and
 * If-Match, the attempt decided again is the request's one answer (kept once, one event), and the If-Match of the
 * version first read still holds (the refused attempt wrote nothing). A change of a deleted team's resolved ticket
 * that does not reopen it enters no team cell: not refused (every commit of a ticket with a team is conditioned).
 */
const gateway = useGateway();
const tickets = ticketsThrough(gateway);

/** A transaction that writes a ticket item of the account naming `teamId`. */
const writesTicketOf = (accountId: string, teamId: number) => (input: Record<string, unknown>) =>
  (input.TransactItems as { Put?: { Item?: Record<string, unknown> } }[]).some(
    (a) =>
      a.Put?.Item?.type === 'ticket' &&
      String(a.Put.Item.pk).includes(accountId) &&
      (a.Put.Item.team as { id?: number } | null)?.id === teamId,
  );

type FeedEvent = { type: string; data: { object: { uuid?: string }; version: number } };

async function resolvedInBilling() {
  const people = await peopleAccount(gateway);
  const key = people.account.apiKey;
  const billing = await people.team({ name: 'Billing' });
  const ticket = await tickets.create(key);
  await tickets.update(key, ticket.uuid, { team_id: billing.id, status: 'resolved' });
  const updatesOf = async (uuid: string) =>
    ((await people.events()) as FeedEvent[]).filter(
      (e) => e.type === 'ticket.updated' && e.data.object.uuid === uuid,
    );
  return { ...people, key, billing, ticket, updatesOf };
}

describe("a reopen that meets its team's deletion, decided again", () => {
  it('with an Idempotency-Key and If-Match: 200 in no team, the same answer to the retry, one event', async () => {
    const d = await resolvedInBilling();
    const { etag } = await tickets.current(d.key, d.ticket.uuid);
    let deleted: number | undefined;
    beforeCallOnce(
      'TransactWriteItemsCommand',
      writesTicketOf(d.account.accountId, d.billing.id),
      async () => {
        deleted = (await d.call('DELETE', `/api/teams/${d.billing.id}`)).status;
      },
    );
    const headers = { 'Idempotency-Key': 'reopen-1', 'If-Match': etag as string };
    const reopened = await tickets.patch(d.key, d.ticket.uuid, { status: 'open' }, headers);
    expect(deleted).toBe(200);
    expect(reopened.status, reopened.text).toBe(200);
    expect(reopened.body.ticket).toMatchObject({ status: 'open', team: null });
    const again = await tickets.patch(d.key, d.ticket.uuid, { status: 'open' }, headers);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(reopened.body);
    expect(again.headers.get('etag')).toBe(reopened.headers.get('etag'));
    const updates = await d.updatesOf(d.ticket.uuid);
    // The resolution, then the reopen once.
    expect(updates.map((e) => e.data.version)).toEqual([2, 3]);
    const now = await tickets.current(d.key, d.ticket.uuid);
    expect([now.ticket.status, now.ticket.team, now.etag]).toEqual(['open', null, '"3"']);
  });

  it("a deleted team's resolved ticket changed without a reopen (priority, an agent's note) keeps the team, not refused", async () => {
    const d = await resolvedInBilling();
    expect((await d.call('DELETE', `/api/teams/${d.billing.id}`)).status).toBe(200);
    const changed = await tickets.patch(d.key, d.ticket.uuid, { priority: 'high' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.ticket).toMatchObject({ status: 'resolved', priority: 'high' });
    expect(changed.body.ticket.team?.id).toBe(d.billing.id);
    const ann = await d.agent({ email: 'ann@desk.test', name: 'Ann' });
    const note = await d.call('POST', `/api/tickets/${d.ticket.uuid}/messages`, {
      body: 'Internal only.',
      visibility: 'internal',
      agent_id: ann.id,
    });
    expect(note.status, note.text).toBe(201);
    const now = (await tickets.current(d.key, d.ticket.uuid)).ticket;
    expect([now.status, now.team?.id]).toEqual(['resolved', d.billing.id]);
  });
});
