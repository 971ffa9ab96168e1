import { describe, expect, it } from 'vitest';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { putConfigEntities } from '#lib/data/accounts/accounts.ts';
import { moveConfigVersion } from '#lib/data/accounts/config-version.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { agentsFile } from '#test/support/accounts.ts';
import { later } from '#test/support/api-keys.ts';
import { useGateway } from '#test/support/http.ts';
import { type AgentShown, peopleAccount } from '#test/support/people.ts';
import { countRoundTrips } from '#test/support/round-trips.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';

/**
 * Agents as API resources (decisions.md, "People: agents, teams and organizations"): create, read, change, list
 * with a cursor and filters, the e-mail unique in the account, If-Match, Idempotency-Key, events, scopes, other
 * accounts' ids, and automatic assignment seeing a change at once.
 */
const gateway = useGateway();
const setUp = (file: Record<string, unknown> = {}) => peopleAccount(gateway, file);
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const inAnHour = () => formatTimestamp(nowMicros() + 3_600_000_000);

describe('agents', () => {
  it('round trip: create with defaults, get with its ETag, change, get again', async () => {
    const { call, agent } = await setUp();
    const made = await call('POST', '/api/agents', { email: 'Ann@Desk.test', name: 'Ann' });
    expect(made.status).toBe(201);
    expect(made.headers.get('etag')).toBe('"1"');
    const ann = made.body.data as AgentShown;
    expect(ann).toEqual({
      id: expect.any(Number),
      email: 'Ann@Desk.test', // compared lower-cased, kept as given
      name: 'Ann',
      active: true,
      team_ids: [],
      status: 'available',
      status_until: null,
      capacity: null,
      open_tickets: 0,
      created_at: expect.stringMatching(TIME),
      updated_at: ann.created_at,
      imported_from: null,
    });
    const got = await call('GET', `/api/agents/${ann.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ data: ann });
    expect(got.headers.get('etag')).toBe('"1"');

    const until = inAnHour();
    const patched = await call('PATCH', `/api/agents/${ann.id}`, {
      name: 'Ann B',
      capacity: 12,
      status: 'away',
      status_until: until,
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.headers.get('etag')).toBe('"2"');
    expect(patched.body.data).toMatchObject({
      name: 'Ann B',
      capacity: 12,
      status: 'away',
      status_until: until,
    });
    expect((await call('GET', `/api/agents/${ann.id}`)).body).toEqual(patched.body);
    // Ids are never reused: the next agent's is higher.
    expect((await agent({ email: 'bob@desk.test', name: 'Bob' })).id).toBeGreaterThan(ann.id);
  });

  it('refuses a taken e-mail (any case), capacity 0 or 10,001, an end without a status, and writes nothing', async () => {
    const { call, agent, events } = await setUp();
    const ann = await agent({ email: 'ann@desk.test', name: 'Ann' });
    const mark = (await events()).at(-1)?.id;
    const refused = [
      [{ email: 'ANN@desk.TEST', name: 'Other' }, 'email', 'The email has already been taken.'],
      [
        { email: 'c@desk.test', name: 'C', capacity: 0 },
        'capacity',
        'The capacity field must be between 1 and 10000.',
      ],
      [
        { email: 'c@desk.test', name: 'C', capacity: 10_001 },
        'capacity',
        'The capacity field must be between 1 and 10000.',
      ],
      [
        { email: 'c@desk.test', name: 'C', capacity: 1.5 },
        'capacity',
        'The capacity field must be an integer.',
      ],
      [
        { email: 'c@desk.test', name: 'C', status_until: inAnHour() },
        'status_until',
        expect.stringContaining('away or offline'),
      ],
      [
        { email: 'c@desk.test', name: 'C', status: 'away', status_until: '2020-01-01T00:00:00Z' },
        'status_until',
        'The status until field must be a time in the future.',
      ],
      [{ email: 'not an address', name: 'C' }, 'email', 'The email field must be a valid email address.'],
      [{ email: 'c@desk.test' }, 'name', 'The name field is required.'],
      [{ email: 'c@desk.test', name: 'C', status: 'busy' }, 'status', 'The selected status is invalid.'],
    ] as const;
    for (const [body, field, message] of refused) {
      const answer = await call('POST', '/api/agents', body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.errors[field]).toEqual([message]);
    }
    for (const capacity of [0, 10_001]) {
      const answer = await call('PATCH', `/api/agents/${ann.id}`, { capacity });
      expect(answer.status).toBe(422);
      expect(answer.body.errors.capacity).toEqual(['The capacity field must be between 1 and 10000.']);
    }
    const taken = await agent({ email: 'bob@desk.test', name: 'Bob' });
    const moved = await call('PATCH', `/api/agents/${taken.id}`, { email: 'Ann@desk.test' });
    expect(moved.status).toBe(422);
    expect(moved.body.errors.email).toEqual(['The email has already been taken.']);
    const list = await call('GET', '/api/agents');
    expect(list.body.data.map((a: AgentShown) => a.email)).toEqual(['ann@desk.test', 'bob@desk.test']);
    expect((await call('GET', `/api/agents/${ann.id}`)).body.data).toEqual(ann);
    expect((await events(mark)).map((e) => e.type)).toEqual(['agent.created']);
  });

  it('takes an e-mail once when ten creates race for it in different cases', async () => {
    const { call } = await setUp();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call('POST', '/api/agents', { email: i % 2 ? 'RACE@desk.test' : 'race@DESK.test', name: `R${i}` }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array(9).fill(422)]);
    for (const a of answers.filter((x) => x.status === 422)) {
      expect(a.body.errors.email).toEqual(['The email has already been taken.']);
    }
    expect((await call('GET', '/api/agents')).body.data).toHaveLength(1);
  });

  it('pages by cursor and filters by team, active and status (a passed status_until reads as available)', async () => {
    const { call, agent, team } = await setUp();
    const billing = await team({ name: 'Billing' });
    const made: AgentShown[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        await agent({
          email: `a${i}@desk.test`,
          name: `A${i}`,
          ...(i % 2 === 0 ? { team_ids: [billing.id] } : {}),
          ...(i === 3 ? { active: false } : {}),
          ...(i === 4 ? { status: 'offline' } : {}),
        }),
      );
    }
    const ids = made.map((a) => a.id);
    const pages: number[][] = [];
    let after = '';
    for (;;) {
      const page = await call('GET', `/api/agents?limit=2${after ? `&after=${after}` : ''}`);
      expect(page.status).toBe(200);
      pages.push(page.body.data.map((a: AgentShown) => a.id));
      if (page.body.next_cursor === null) break;
      after = page.body.next_cursor;
    }
    expect(pages).toEqual([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
    const idsOf = async (query: string) =>
      (await call('GET', `/api/agents?${query}`)).body.data.map((a: AgentShown) => a.id);
    expect(await idsOf(`team_id=${billing.id}`)).toEqual([ids[0], ids[2], ids[4]]);
    expect(await idsOf('active=false')).toEqual([ids[3]]);
    expect(await idsOf('status=offline')).toEqual([ids[4]]);
    expect(await idsOf(`status=available&team_id=${billing.id}`)).toEqual([ids[0], ids[2]]);
    expect((await call('GET', '/api/agents?limit=0')).status).toBe(422);
    expect((await call('GET', '/api/agents?status=busy')).status).toBe(422);

    const until = formatTimestamp(nowMicros() + 60_000_000);
    const away = await call('PATCH', `/api/agents/${ids[0]}`, { status: 'away', status_until: until });
    expect(away.body.data).toMatchObject({ status: 'away', status_until: until });
    expect(await idsOf('status=away')).toEqual([ids[0]]);
    await later(120_000, async () => {
      const back = await call('GET', `/api/agents/${ids[0]}`);
      expect(back.body.data).toMatchObject({ status: 'available', status_until: null });
      expect(await idsOf('status=away')).toEqual([]);
      expect(await idsOf(`status=available&team_id=${billing.id}`)).toEqual([ids[0], ids[2]]);
    });
  });

  it('If-Match: a stale ETag is a 412 and changes nothing; the current one passes', async () => {
    const { call, agent } = await setUp();
    const ann = await agent({ email: 'ann@desk.test', name: 'Ann' });
    expect((await call('PATCH', `/api/agents/${ann.id}`, { name: 'Ann 2' })).headers.get('etag')).toBe('"2"');
    const stale = await call('PATCH', `/api/agents/${ann.id}`, { name: 'Ann 3' }, { 'If-Match': '"1"' });
    expect(stale.status).toBe(412);
    expect((await call('GET', `/api/agents/${ann.id}`)).body.data.name).toBe('Ann 2');
    const current = await call('PATCH', `/api/agents/${ann.id}`, { name: 'Ann 3' }, { 'If-Match': '"2"' });
    expect(current.status).toBe(200);
    expect(current.headers.get('etag')).toBe('"3"');
    // A change that changes nothing writes nothing: same version.
    const same = await call('PATCH', `/api/agents/${ann.id}`, { name: 'Ann 3' });
    expect(same.headers.get('etag')).toBe('"3"');
  });

  it('Idempotency-Key: a replay answers the first answer and creates nothing more', async () => {
    const { call, events } = await setUp();
    const headers = { 'Idempotency-Key': 'agent-create-1' };
    const body = { email: 'idem@desk.test', name: 'Idem' };
    const first = await call('POST', '/api/agents', body, headers);
    expect(first.status).toBe(201);
    const replay = await call('POST', '/api/agents', body, headers);
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const other = await call('POST', '/api/agents', { ...body, name: 'Other' }, headers);
    expect(other.status).toBe(422);
    expect((await call('GET', '/api/agents')).body.data).toHaveLength(1);
    expect((await events()).filter((e) => e.type === 'agent.created')).toHaveLength(1);
    const id = first.body.data.id;
    const patchHeaders = { 'Idempotency-Key': 'agent-patch-1' };
    const patched = await call('PATCH', `/api/agents/${id}`, { capacity: 3 }, patchHeaders);
    const again = await call('PATCH', `/api/agents/${id}`, { capacity: 3 }, patchHeaders);
    expect(again.text).toBe(patched.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('writes agent.created and agent.updated (with previous) in the feed, and team.updated for a team joined', async () => {
    const { call, agent, team, events } = await setUp();
    const billing = await team({ name: 'Billing' });
    const mark = (await events()).at(-1)?.id;
    const ann = await agent({ email: 'ann@desk.test', name: 'Ann' });
    const patched = await call('PATCH', `/api/agents/${ann.id}`, { name: 'Ann B', team_ids: [billing.id] });
    const teamNow = (await call('GET', `/api/teams/${billing.id}`)).body.data;
    const feed = await events(mark);
    // Each object's events in the order of its changes (events of one commit, of two objects, in either order).
    const [created, updated] = feed.filter((e) => e.type.startsWith('agent.'));
    const joined = feed.filter((e) => e.type.startsWith('team.'));
    expect(feed).toHaveLength(3);
    expect(created?.type).toBe('agent.created');
    expect(created?.data).toEqual({ object: ann, version: 1 });
    expect(updated?.type).toBe('agent.updated');
    expect(updated?.data).toEqual({
      object: patched.body.data,
      previous: { name: 'Ann', team_ids: [], updated_at: ann.updated_at },
      version: 2,
    });
    expect(joined.map((e) => e.type)).toEqual(['team.updated']);
    expect(joined[0]?.data).toEqual({
      object: teamNow,
      previous: { agent_ids: [], updated_at: billing.updated_at },
      version: 2,
    });
    expect(
      (await call('GET', '/api/events?type=agent.*')).body.data.map((e: { type: string }) => e.type),
    ).toEqual(['agent.created', 'agent.updated']);
  });

  it('needs agents:read to read and agents:write to write: 403 naming the scope, before a 404', async () => {
    const { account } = await setUp();
    const keyOf = async (scopes: string[]) =>
      (await createKey(account.accountId, { name: scopes.join(' '), scopes: scopes as never })).api_key;
    const tickets = await keyOf(['tickets:write']);
    const reader = await keyOf(['agents:read']);
    const writer = await keyOf(['agents:write']);
    const as = (key: string, method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key, ...(body ? { body } : {}) });
    const lacks = (scope: string) => ({ message: `This key lacks the scope ${scope}.` });
    expect((await as(tickets, 'GET', '/api/agents/999999')).body).toEqual(lacks('agents:read'));
    expect((await as(tickets, 'GET', '/api/agents')).status).toBe(403);
    expect((await as(reader, 'POST', '/api/agents', { email: 'x@desk.test', name: 'X' })).body).toEqual(
      lacks('agents:write'),
    );
    expect((await as(reader, 'PATCH', '/api/agents/999999', { name: 'X' })).status).toBe(403);
    expect((await as(reader, 'GET', '/api/agents')).status).toBe(200);
    const made = await as(writer, 'POST', '/api/agents', { email: 'x@desk.test', name: 'X' });
    expect(made.status).toBe(201);
    expect((await as(writer, 'GET', `/api/agents/${made.body.data.id}`)).status).toBe(200);
  });

  it("another account's agent is a 404, and its team in team_ids a 422 that writes nothing", async () => {
    const mine = await setUp();
    const theirs = await setUp();
    const their = await theirs.agent({ email: 'them@desk.test', name: 'Them' });
    const theirTeam = await theirs.team({ name: 'Theirs' });
    expect((await mine.call('GET', `/api/agents/${their.id}`)).status).toBe(404);
    expect((await mine.call('PATCH', `/api/agents/${their.id}`, { name: 'Mine' })).status).toBe(404);
    // Even a body that would be refused answers 404 first.
    expect((await mine.call('PATCH', `/api/agents/${their.id}`, { capacity: 0 })).status).toBe(404);
    expect((await mine.call('GET', '/api/agents/not-an-id')).status).toBe(404);
    const ann = await mine.agent({ email: 'ann@desk.test', name: 'Ann' });
    const refused = await mine.call('PATCH', `/api/agents/${ann.id}`, { team_ids: [theirTeam.id] });
    expect(refused.status).toBe(422);
    expect(refused.body.errors['team_ids.0']).toEqual(['The selected team id is invalid.']);
    const created = await mine.call('POST', '/api/agents', {
      email: 'b@desk.test',
      name: 'B',
      team_ids: [theirTeam.id],
    });
    expect(created.status).toBe(422);
    expect((await mine.call('GET', '/api/agents')).body.data).toEqual([ann]);
    expect((await theirs.call('GET', `/api/teams/${theirTeam.id}`)).body.data.agent_ids).toEqual([]);
  });

  it("shows its open tickets (open, pending, in progress) exactly, from least-busy's own cells", async () => {
    const { call, agent } = await setUp();
    const ann = await agent({ email: 'ann@desk.test', name: 'Ann' });
    const ticket = async () =>
      (
        await call('POST', '/api/tickets', {
          subject: 'S',
          description: 'D',
          requester_email: 'r@client.test',
        })
      ).body.ticket.uuid as string;
    const [t1, t2] = [await ticket(), await ticket()];
    for (const t of [t1, t2]) {
      expect((await call('PATCH', `/api/tickets/${t}`, { assignee_id: ann.id })).status).toBe(200);
    }
    expect((await call('GET', `/api/agents/${ann.id}`)).body.data.open_tickets).toBe(2);
    await call('PATCH', `/api/tickets/${t1}`, { status: 'pending' });
    await call('PATCH', `/api/tickets/${t2}`, { status: 'resolved' });
    expect((await call('GET', `/api/agents/${ann.id}`)).body.data.open_tickets).toBe(1);
    expect((await call('GET', '/api/agents')).body.data[0].open_tickets).toBe(1);
  });
});

describe('an agent list page reads its own agents only', () => {
  it("reads the page's agent cells, not every agent's: as many items at 60 agents as at 2", async () => {
    const { call, account } = await setUp({
      agents: agentsFile(60),
      auto_assignment: { enabled: true, method: 'round_robin' },
    });
    // A ticket each (round-robin): every agent has a cell of open work.
    await seedTickets(
      account.accountId,
      Array.from({ length: 60 }, () => ({
        subject: 'S',
        description: 'D',
        requester_email: 'r@client.test',
      })),
    );
    await call('GET', '/api/agents?limit=2'); // the configuration cached, as on a warm container
    const page = await countRoundTrips(() => call('GET', '/api/agents?limit=2'));
    expect(page.result.body.data).toHaveLength(2);
    expect(page.result.body.data[0].open_tickets).toBe(1);
    // The caller's key and its account (two GetItems) and the page's two cells: not the 60 agents' cells.
    expect(page.itemsRead, page.calls.join(', ')).toBeLessThanOrEqual(4);
  });
});

describe('a change is seen at once (not after the 30 s settings cache)', () => {
  const ticketBody = { subject: 'S', description: 'D', requester_email: 'r@client.test' };

  it('by automatic assignment: a retired agent gets no ticket, a new one is a candidate, on the next create', async () => {
    const { call, agent } = await setUp({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: [{ email: 'old@desk.test', name: 'Old' }],
    });
    const create = async () => (await call('POST', '/api/tickets', ticketBody)).body.ticket.assignee;
    const old = (await create()) as { id: number };
    expect(old).toMatchObject({ name: 'Old' });
    // The settings are cached now; a new agent (no tickets: least busy) is picked at once.
    const fresh = await agent({ email: 'new@desk.test', name: 'New' });
    expect((await create()).id).toBe(fresh.id);
    // Retired: never picked again, from the next create on.
    expect((await call('PATCH', `/api/agents/${fresh.id}`, { active: false })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await create()).id).toBe(old.id);
  });

  it('by a ticket update and a message naming an agent the API just made', async () => {
    const { call, agent } = await setUp({ agents: [{ email: 'old@desk.test', name: 'Old' }] });
    const made = await call('POST', '/api/tickets', ticketBody);
    const uuid = made.body.ticket.uuid;
    const fresh = await agent({ email: 'new@desk.test', name: 'New' });
    const assigned = await call('PATCH', `/api/tickets/${uuid}`, { assignee_id: fresh.id });
    expect(assigned.status, assigned.text).toBe(200);
    expect(assigned.body.ticket.assignee).toEqual({ id: fresh.id, name: 'New', email: 'new@desk.test' });
    const note = await call('POST', `/api/tickets/${uuid}/messages`, {
      body: 'On it.',
      author: 'agent',
      agent_id: fresh.id,
      visibility: 'internal',
    });
    expect(note.status, note.text).toBe(201);
  });
});

describe('the settings cache outside a request (the inbound mail functions)', () => {
  it('reads the configuration version itself: a moved version reloads, an unmoved one serves the copy', async () => {
    const { account } = await setUp();
    const idsNow = async () => (await getAccountConfig(account.accountId))?.agents.map((a) => a.id);
    expect(await idsNow()).toEqual([]);
    // Written behind the cache's back (as another container would), the version not moved: the copy serves.
    const agent = { id: 9_000_002, email: 'behind@desk.test', name: 'Behind', active: true, teamIds: [] };
    await putConfigEntities(account.accountId, [{ type: 'agent', value: agent }]);
    expect(await idsNow()).toEqual([]);
    await moveConfigVersion(account.accountId);
    expect(await idsNow()).toEqual([agent.id]);
  });
});

describe('the account file and the API are one truth', () => {
  it('apply updates an API-made agent in place by e-mail, changes only what the file gives, deletes nothing', async () => {
    const file = {
      teams: [{ name: 'Billing' }],
      agents: [{ email: 'x@desk.test', name: 'X', teams: ['Billing'] }],
    };
    const { account, call, agent, team, events } = await setUp(file);
    const [x] = (await call('GET', '/api/agents')).body.data as AgentShown[];
    const y = await agent({ email: 'y@desk.test', name: 'Y', capacity: 5, status: 'away' });
    const support = await team({ name: 'Support' });
    expect((await call('PATCH', `/api/agents/${x?.id}`, { active: false })).status).toBe(200);
    const mark = (await events()).at(-1)?.id;

    const again = {
      slug: account.slug,
      name: account.account.name,
      plan: 'pro',
      teams: [{ name: 'BILLING' }],
      agents: [
        { email: 'X@desk.test', name: 'X2' },
        { email: 'Y@DESK.test', name: 'Y2', teams: ['Support'] },
      ],
    };
    const state = await applyAccountFile(again);
    const billingId = x?.team_ids[0];
    expect(state.agents).toEqual([
      { id: x?.id, email: 'X@desk.test', name: 'X2', active: false, team_ids: [billingId] },
      { id: y.id, email: 'Y@DESK.test', name: 'Y2', active: true, team_ids: [support.id] },
    ]);
    expect(state.teams).toEqual([
      { id: billingId, name: 'BILLING' },
      { id: support.id, name: 'Support' },
    ]);
    // What only the API sets is kept; the API reads what apply wrote, at once.
    const yNow = (await call('GET', `/api/agents/${y.id}`)).body.data;
    expect(yNow).toMatchObject({ name: 'Y2', capacity: 5, status: 'away', team_ids: [support.id] });
    expect((await call('GET', `/api/teams/${support.id}`)).body.data.agent_ids).toEqual([y.id]);
    const feed = await events(mark);
    expect(feed.map((e) => e.type).sort()).toEqual([
      'agent.updated',
      'agent.updated',
      'team.updated',
      'team.updated',
    ]);
    expect(feed.find((e) => e.type === 'agent.updated' && e.data.object.id === y.id)?.data.object).toEqual(
      yNow,
    );

    // The same file again changes nothing.
    const last = (await events()).at(-1)?.id;
    await applyAccountFile(again);
    expect(await events(last)).toEqual([]);
    expect((await call('GET', `/api/agents/${y.id}`)).headers.get('etag')).toBe('"2"');
  });

  it("an agent the file made has its e-mail taken for the API, and the API's new agent is the next create's candidate", async () => {
    const { account, call } = await setUp({
      auto_assignment: { enabled: true, method: 'round_robin' },
      agents: [{ email: 'filed@desk.test', name: 'Filed' }],
    });
    const taken = await call('POST', '/api/agents', { email: 'FILED@desk.test', name: 'Again' });
    expect(taken.status).toBe(422);
    const ticket = async () =>
      (
        await call('POST', '/api/tickets', {
          subject: 'S',
          description: 'D',
          requester_email: 'r@client.test',
        })
      ).body.ticket.assignee?.email;
    expect(await ticket()).toBe('filed@desk.test');
    // A file that retires the agent and adds another: the next create sees it.
    await applyAccountFile({
      slug: account.slug,
      name: account.account.name,
      plan: 'pro',
      agents: [
        { email: 'filed@desk.test', name: 'Filed', active: false },
        { email: 'second@desk.test', name: 'Second' },
      ],
    });
    expect(await ticket()).toBe('second@desk.test');
  });

  it('an agent an account file wrote before people were resources (no e-mail item) keeps its e-mail its own', async () => {
    const { account, call } = await setUp();
    const [id] = [9_000_001];
    await putConfigEntities(account.accountId, [
      { type: 'agent', value: { id, email: 'legacy@desk.test', name: 'Legacy', active: true, teamIds: [] } },
    ]);
    await moveConfigVersion(account.accountId);
    expect((await call('POST', '/api/agents', { email: 'Legacy@desk.test', name: 'Copy' })).status).toBe(422);
    const legacy = await call('GET', `/api/agents/${id}`);
    expect(legacy.body.data).toMatchObject({
      status: 'available',
      capacity: null,
      created_at: expect.any(String),
    });
    expect(legacy.headers.get('etag')).toBe('"1"');
    const changed = await call(
      'PATCH',
      `/api/agents/${id}`,
      { email: 'legacy2@desk.test' },
      { 'If-Match': '"1"' },
    );
    expect(changed.status, changed.text).toBe(200);
    expect((await call('POST', '/api/agents', { email: 'legacy@desk.test', name: 'Now free' })).status).toBe(
      201,
    );
    expect((await call('POST', '/api/agents', { email: 'LEGACY2@desk.test', name: 'Taken' })).status).toBe(
      422,
    );
  });
});
