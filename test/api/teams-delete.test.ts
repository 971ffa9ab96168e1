import { AsyncResource } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { MAX_DELETED_TEAM_MEMBERS } from '#lib/people/teams.ts';
import { admin } from '#test/support/admin.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount, type TeamShown } from '#test/support/people.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';
import { ticketsThrough } from '#test/support/tickets.ts';

/**
 * Deleting a team that still has open tickets (decisions.md, "People": open, pending or in_progress, assigned or
 * not) is a 409 naming them, and writes nothing; a ticket given the team while the deletion lands never points at
 * the deleted team: whichever commits second is refused.
 */
const gateway = useGateway();
const tickets = ticketsThrough(gateway);
type Answer = Awaited<ReturnType<typeof gateway.call>>;

/** A transaction that writes a ticket item of the account naming `teamId`. */
const writesTicketOf = (accountId: string, teamId: number) => (input: Record<string, unknown>) =>
  (input.TransactItems as { Put?: { Item?: Record<string, unknown> } }[]).some(
    (a) =>
      a.Put?.Item?.type === 'ticket' &&
      String(a.Put.Item.pk).includes(accountId) &&
      (a.Put.Item.team as { id?: number } | null)?.id === teamId,
  );

/** The items (`pk sk`) every TransactWriteItems call made while `work` ran names. */
async function transactedItems(work: () => Promise<unknown>): Promise<Set<string>> {
  const items = new Set<string>();
  const name = `transactedItems${Math.random()}`;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        const actions = (args as { input: { TransactItems: Record<string, Record<string, unknown>>[] } })
          .input.TransactItems;
        for (const a of actions) {
          const { Key, Item } = Object.values(a)[0] as {
            Key?: Record<string, unknown>;
            Item?: Record<string, unknown>;
          };
          const key = Key ?? Item ?? {};
          items.add(`${key.pk} ${key.sk}`);
        }
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  try {
    await work();
  } finally {
    dynamo.middlewareStack.remove(name);
  }
  return items;
}

async function setUp(file: Record<string, unknown> = {}) {
  const people = await peopleAccount(gateway, file);
  const key = people.account.apiKey;
  const teamNamed = async (name: string) =>
    ((await people.call('GET', '/api/teams')).body.data as TeamShown[]).find(
      (t) => t.name === name,
    ) as TeamShown;
  const teamOf = async (uuid: string) => (await tickets.current(key, uuid)).ticket.team?.id ?? null;
  return { ...people, key, teamNamed, teamOf };
}

/**
 * Holds the next commit of a ticket of `teamId` until the team's DELETE has landed: a change decided while the team
 * existed meets its deletion. Answers the DELETE's answer once it has run.
 */
function deletedAtTicketCommit(
  d: Awaited<ReturnType<typeof setUp>>,
  teamId: number,
): () => Answer | undefined {
  let deleted: Answer | undefined;
  beforeCallOnce('TransactWriteItemsCommand', writesTicketOf(d.account.accountId, teamId), async () => {
    deleted = await d.call('DELETE', `/api/teams/${teamId}`);
  });
  return () => deleted;
}

describe('deleting a team with open tickets', () => {
  it('open, pending, in_progress (assigned or waiting) are a 409 naming them, nothing written; resolved ones are not', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    const ann = await d.agent({ email: 'ann@desk.test', name: 'Ann', team_ids: [billing.id] });
    const made = await Promise.all([0, 1, 2, 3].map(() => tickets.create(d.key)));
    const bodies = [
      { team_id: billing.id, status: 'open' },
      { team_id: billing.id, status: 'pending', assignee_id: ann.id },
      { team_id: billing.id, status: 'in_progress', assignee_id: ann.id },
      { team_id: billing.id, status: 'resolved', assignee_id: ann.id },
    ];
    for (const [i, t] of made.entries()) await tickets.update(d.key, t.uuid, bodies[i]);
    const before = (await d.call('GET', `/api/teams/${billing.id}`)).body.data;

    for (const [i, open] of made.slice(0, 3).entries()) {
      const events = (await d.events()).length;
      const refused = await d.call('DELETE', `/api/teams/${billing.id}`);
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body.message).toContain(`The team has ${3 - i} open ${i === 2 ? 'ticket' : 'tickets'} `);
      expect((await d.call('GET', `/api/teams/${billing.id}`)).body.data).toEqual(before);
      expect((await d.call('GET', `/api/agents/${ann.id}`)).body.data.team_ids).toEqual([billing.id]);
      expect((await d.events()).length).toBe(events);
      await tickets.update(d.key, open.uuid, { status: 'closed' });
    }
    const deleted = await d.call('DELETE', `/api/teams/${billing.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    // A resolved ticket of the deleted team reopened is not refused: it goes to the account's queue (no team).
    const reopened = await tickets.patch(d.key, made[3].uuid, { status: 'open' });
    expect(reopened.status, reopened.text).toBe(200);
    expect(await d.teamOf(made[3].uuid)).toBeNull();
  });

  it('a ticket moved out of the team, or deleted, no longer holds it', async () => {
    const d = await setUp();
    const [billing, sales] = [await d.team({ name: 'Billing' }), await d.team({ name: 'Sales' })];
    const [moved, trashed] = [await tickets.create(d.key), await tickets.create(d.key)];
    await tickets.update(d.key, moved.uuid, { team_id: billing.id });
    await tickets.update(d.key, trashed.uuid, { team_id: billing.id });
    expect((await d.call('DELETE', `/api/teams/${billing.id}`)).status).toBe(409);
    await tickets.update(d.key, moved.uuid, { team_id: sales.id });
    expect((await d.call('DELETE', `/api/tickets/${trashed.uuid}`)).status).toBe(200);
    expect((await d.call('DELETE', `/api/teams/${billing.id}`)).status).toBe(200);
    expect((await d.call('DELETE', `/api/teams/${sales.id}`)).status).toBe(409);
  });

  it('a ticket moved into the team while its deletion lands: the deletion first refuses the move (422)', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    const ticket = await tickets.create(d.key);
    // The move decided (the team exists); before its commit, the deletion, which sees no open ticket, lands.
    const deleted = deletedAtTicketCommit(d, billing.id);
    const moved = await tickets.patch(d.key, ticket.uuid, { team_id: billing.id });
    expect(deleted()?.status, deleted()?.text).toBe(200);
    expect(moved.status, moved.text).toBe(422);
    expect(moved.body.errors).toEqual({ team_id: ['The selected team id is invalid.'] });
    expect(await d.teamOf(ticket.uuid)).toBeNull();
  });

  it('a resolved ticket of the team reopened while its deletion lands decides again: in no team, never in the deleted one', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    const ticket = await tickets.create(d.key);
    await tickets.update(d.key, ticket.uuid, { team_id: billing.id, status: 'resolved' });
    // The reopen decided (the team exists, so the ticket keeps it); before its commit, the deletion, which sees no
    // open ticket, lands.
    const deleted = deletedAtTicketCommit(d, billing.id);
    const reopened = await tickets.patch(d.key, ticket.uuid, { status: 'open' });
    expect(deleted()?.status, deleted()?.text).toBe(200);
    expect(reopened.status, reopened.text).toBe(200);
    expect(reopened.body.ticket.team).toBeNull();
    expect(await d.teamOf(ticket.uuid)).toBeNull();
  });

  it('a requester’s message reopening the team’s resolved ticket while its deletion lands: posted, the ticket in no team', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    const ticket = await tickets.create(d.key);
    await tickets.update(d.key, ticket.uuid, { team_id: billing.id, status: 'resolved' });
    const deleted = deletedAtTicketCommit(d, billing.id);
    const posted = await d.call('POST', `/api/tickets/${ticket.uuid}/messages`, {
      body: 'It broke again.',
      author: 'requester',
    });
    expect(posted.status, posted.text).toBe(201);
    expect(deleted()?.status, deleted()?.text).toBe(200);
    const after = (await tickets.current(d.key, ticket.uuid)).ticket;
    expect([after.status, after.team]).toEqual(['open', null]);
  });

  it('an open ticket of the team restored from the trash while its deletion lands decides again: in no team, the deletion done', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    const ticket = await tickets.create(d.key);
    await tickets.update(d.key, ticket.uuid, { team_id: billing.id });
    const trashed = await d.call('DELETE', `/api/tickets/${ticket.uuid}`);
    expect(trashed.status, trashed.text).toBe(200);
    // The restore decided (the team exists, so the ticket comes back in it); before its commit, the deletion, which
    // sees no open ticket, lands.
    const deleted = deletedAtTicketCommit(d, billing.id);
    const restored = await d.call('POST', `/api/trash/${ticket.uuid}/restore`, {});
    expect(deleted()?.status, deleted()?.text).toBe(200);
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.data.team).toBeNull();
    const after = (await tickets.current(d.key, ticket.uuid)).ticket;
    expect([after.status, after.team]).toEqual(['open', null]);
    expect((await d.call('GET', `/api/teams/${billing.id}`)).status).toBe(404);
    const restoredEvent = (await d.events()).find((e) => e.type === 'ticket.restored');
    expect(restoredEvent?.data.object.team).toBeNull();
  });

  it('a ticket moved into the team while its deletion is held: the move first refuses the deletion (409)', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    // Shards that hold values (a ticket entered and left): the deletion conditions them on what it read.
    const [left, ticket] = [await tickets.create(d.key), await tickets.create(d.key)];
    await tickets.update(d.key, left.uuid, { team_id: billing.id, status: 'resolved' });
    // The deletion decided (no open ticket); before its commit (the one closing the cell), the move lands.
    let moved: Answer | undefined;
    beforeCallOnce('TransactWriteItemsCommand', 'SET #closed = :closed', async () => {
      moved = await tickets.patch(d.key, ticket.uuid, { team_id: billing.id });
    });
    const deleted = await d.call('DELETE', `/api/teams/${billing.id}`);
    expect(moved?.status, moved?.text).toBe(200);
    expect(deleted.status, deleted.text).toBe(409);
    expect(deleted.body.message).toContain('The team has 1 open ticket ');
    expect(await d.teamOf(ticket.uuid)).toBe(billing.id);
    expect((await d.call('GET', `/api/teams/${billing.id}`)).status).toBe(200);
  });

  it('a deleted team stays closed through a reindex of the account: a move decided before both is still refused', async () => {
    const d = await setUp();
    const billing = await d.team({ name: 'Billing' });
    // One of its tickets entered and left it (resolved): the deleted team's cell has shards that counted, which no
    // ticket counts in any more (a reopened one leaves a deleted team): the reindex would delete them.
    const [kept, ticket] = [await tickets.create(d.key), await tickets.create(d.key)];
    await tickets.update(d.key, kept.uuid, { team_id: billing.id, status: 'resolved' });
    let deleted: Answer | undefined;
    // Bound to the test's context: the reindex is the operator's, not the held update's function's (IAM check).
    const meanwhile = AsyncResource.bind(async () => {
      deleted = await d.call('DELETE', `/api/teams/${billing.id}`);
      expect((await admin('tickets', 'reindex', d.account.slug)).code).toBe(0);
    });
    beforeCallOnce('TransactWriteItemsCommand', writesTicketOf(d.account.accountId, billing.id), meanwhile);
    const moved = await tickets.patch(d.key, ticket.uuid, { team_id: billing.id });
    expect(deleted?.status, deleted?.text).toBe(200);
    expect(moved.status, moved.text).toBe(422);
    expect(await d.teamOf(ticket.uuid)).toBeNull();
  });

  it('a ticket created into the team (its category’s default) while its deletion lands decides again: in the new route’s team, never in a deleted team', async () => {
    const file = {
      teams: [{ name: 'Billing' }, { name: 'Sales' }],
      categories: [{ slug: 'refunds', name: 'Refunds', default_team: 'Billing' }],
    };
    const d = await setUp(file);
    const billing = await d.teamNamed('Billing');
    // The create decided on Billing (its category's default); before its commit, the category is routed to Sales
    // and Billing deleted (no open ticket yet).
    let deleted: Answer | undefined;
    beforeCallOnce('TransactWriteItemsCommand', writesTicketOf(d.account.accountId, billing.id), async () => {
      const { slug } = d.account;
      const routed = { slug: 'refunds', name: 'Refunds', default_team: 'Sales' };
      await applyAccountFile({ slug, name: `Test ${slug}`, plan: 'pro', ...file, categories: [routed] });
      deleted = await d.call('DELETE', `/api/teams/${billing.id}`);
    });
    const created = await gateway.call('POST', '/api/tickets', {
      key: d.key,
      body: {
        subject: 'Refund',
        description: 'Please',
        requester_email: 'c@client.test',
        category_slug: 'refunds',
      },
    });
    expect(deleted?.status, deleted?.text).toBe(200);
    // Its commit refused (Billing gone), the create read the configuration again and went where the category goes
    // now: no 409 for the client (nor for a mail's follow-up, which would have been dropped as refused).
    expect(created.status, created.text).toBe(201);
    expect(created.body.ticket.team?.id).toBe((await d.teamNamed('Sales')).id);
    expect((await tickets.list(d.key, '')).total).toBe(1);
  });

  it('two creates into one team write no item in common: no per-team item every create of a busy team meets', async () => {
    const file = {
      teams: [{ name: 'Billing' }],
      categories: [{ slug: 'refunds', name: 'Refunds', default_team: 'Billing' }],
    };
    const d = await setUp(file);
    const billing = await d.teamNamed('Billing');
    // A first create makes what only the account's first ticket in the team makes (the directory's entries).
    await tickets.create(d.key, { category_slug: 'refunds' });
    const [first, second] = [
      await transactedItems(() => tickets.create(d.key, { category_slug: 'refunds' })),
      await transactedItems(() => tickets.create(d.key, { category_slug: 'refunds' })),
    ];
    const common = [...first].filter((item) => second.has(item));
    expect(common).toEqual([]);
    expect((await tickets.list(d.key, `assignee=unassigned&team_id=${billing.id}`)).total).toBe(3);
  });

  it('a team of the most agents its deletion may take out, each away (its queue’s freed entry), goes in one transaction; one more is a 409', async () => {
    // The worst case the bound is for: each agent leaving writes its item, its event and its freed entry (an away
    // agent's, due when it is back); the team's cell closed, one action a shard; the answer kept.
    const d = await setUp();
    const crew = await d.team({ name: 'Crew' });
    const until = new Date(Date.now() + 86_400_000).toISOString();
    for (let i = 0; i <= MAX_DELETED_TEAM_MEMBERS; i++) {
      const body = { email: `m${i}@desk.test`, name: `M ${i}`, status: 'away', status_until: until };
      await d.agent({ ...body, team_ids: [crew.id] });
    }
    const tooMany = await d.call('DELETE', `/api/teams/${crew.id}`);
    expect(tooMany.status, tooMany.text).toBe(409);
    expect(tooMany.body.message).toContain(`at most ${MAX_DELETED_TEAM_MEMBERS} can leave`);
    const last = ((await d.call('GET', `/api/teams/${crew.id}`)).body.data as TeamShown).agent_ids.at(-1);
    expect((await d.call('PATCH', `/api/agents/${last}`, { team_ids: [] })).status).toBe(200);
    const deleted = await d.call('DELETE', `/api/teams/${crew.id}`, undefined, { 'Idempotency-Key': 'crew' });
    expect(deleted.status, deleted.text).toBe(200);
  });

  it('three moves into the team racing its deletion, six rounds: a ticket is in the team exactly when the team is left', async () => {
    const d = await setUp();
    for (let round = 0; round < 6; round++) {
      const team = await d.team({ name: `Team ${round}` });
      const made = await Promise.all([0, 1, 2].map(() => tickets.create(d.key)));
      const [deleted, ...moves] = await Promise.all([
        d.call('DELETE', `/api/teams/${team.id}`),
        ...made.map((t) => tickets.patch(d.key, t.uuid, { team_id: team.id })),
      ]);
      const inTeam = await Promise.all(made.map(async (t) => (await d.teamOf(t.uuid)) === team.id));
      const exists = (await d.call('GET', `/api/teams/${team.id}`)).status === 200;
      expect([200, 409], deleted?.text).toContain(deleted?.status);
      expect(exists).toBe(deleted?.status === 409);
      for (const [i, move] of moves.entries()) {
        expect([200, 422], move.text).toContain(move.status);
        expect(inTeam[i]).toBe(move.status === 200);
        if (!exists) expect(inTeam[i]).toBe(false);
      }
      if (exists) expect(inTeam.some(Boolean)).toBe(true);
    }
  });
});

type FeedEvent = { type: string; data: { object: { uuid?: string }; version: number } };

/** A ticket of Billing, resolved (so Billing may be deleted), and the feed's `ticket.updated` of a ticket. */
async function resolvedInBilling() {
  const d = await setUp();
  const billing = await d.team({ name: 'Billing' });
  const ticket = await tickets.create(d.key);
  await tickets.update(d.key, ticket.uuid, { team_id: billing.id, status: 'resolved' });
  const updatesOf = async (uuid: string) =>
    ((await d.events()) as FeedEvent[]).filter(
      (e) => e.type === 'ticket.updated' && e.data.object.uuid === uuid,
    );
  return { ...d, billing, ticket, updatesOf };
}

/**
 * A reopen that meets its team's deletion is decided again (lib/tickets/team-gone.ts): with an Idempotency-Key and
 * If-Match, the attempt decided again is the request's one answer (kept once, one event), and the If-Match of the
 * version first read still holds (the refused attempt wrote nothing). Every commit of a ticket with a team is
 * conditioned on its cell (teamEntered); one that does not reopen a deleted team's resolved ticket enters none.
 */
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
