import { describe, expect, it } from 'vitest';
import { createKey } from '#lib/accounts/key-making.ts';
import { MAX_MEMBERSHIP_CHANGES } from '#lib/people/plan.ts';
import { useGateway } from '#test/support/http.ts';
import { type AgentShown, peopleAccount, type TeamShown } from '#test/support/people.ts';

/**
 * Teams as API resources (decisions.md, "People"): create, read, rename, set their agents, delete; the name unique
 * in the account; a team's `agent_ids` and its agents' `team_ids` one membership, also under concurrent changes from
 * both sides; If-Match, Idempotency-Key, events, scopes, other accounts' ids.
 */
const gateway = useGateway();
const setUp = (file: Record<string, unknown> = {}) => peopleAccount(gateway, file);

describe('teams', () => {
  it('round trip: create with agents, get, rename and change agents, delete; the agents follow', async () => {
    const { call, agent } = await setUp();
    const [ann, bob] = [
      await agent({ email: 'ann@desk.test', name: 'Ann' }),
      await agent({ email: 'bob@desk.test', name: 'Bob' }),
    ];
    const made = await call('POST', '/api/teams', { name: 'Billing', agent_ids: [bob.id, ann.id, bob.id] });
    expect(made.status, made.text).toBe(201);
    expect(made.headers.get('etag')).toBe('"1"');
    const billing = made.body.data as TeamShown;
    expect(billing).toEqual({
      id: expect.any(Number),
      name: 'Billing',
      agent_ids: [ann.id, bob.id],
      created_at: expect.any(String),
      updated_at: billing.created_at,
      imported_from: null,
    });
    expect((await call('GET', `/api/teams/${billing.id}`)).body).toEqual({ data: billing });
    expect((await call('GET', `/api/agents/${ann.id}`)).body.data.team_ids).toEqual([billing.id]);

    const patched = await call('PATCH', `/api/teams/${billing.id}`, { name: 'Money', agent_ids: [ann.id] });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.headers.get('etag')).toBe('"2"');
    expect(patched.body.data).toMatchObject({ name: 'Money', agent_ids: [ann.id] });
    expect((await call('GET', `/api/agents/${bob.id}`)).body.data.team_ids).toEqual([]);

    const deleted = await call('DELETE', `/api/teams/${billing.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ data: patched.body.data });
    expect((await call('GET', `/api/teams/${billing.id}`)).status).toBe(404);
    expect((await call('GET', `/api/agents/${ann.id}`)).body.data.team_ids).toEqual([]);
    expect((await call('GET', '/api/teams')).body).toEqual({ data: [], next_cursor: null });
  });

  it('pages by cursor', async () => {
    const { call, team } = await setUp();
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await team({ name: `T${i}` })).id);
    const first = await call('GET', '/api/teams?limit=3');
    expect(first.body.data.map((t: TeamShown) => t.id)).toEqual(ids.slice(0, 3));
    const second = await call('GET', `/api/teams?limit=3&after=${first.body.next_cursor}`);
    expect(second.body.data.map((t: TeamShown) => t.id)).toEqual(ids.slice(3));
    expect(second.body.next_cursor).toBeNull();
  });

  it('refuses a taken name (any case), also when creates race for it, and writes nothing', async () => {
    const { call, team } = await setUp();
    const billing = await team({ name: 'Billing' });
    const taken = await call('POST', '/api/teams', { name: 'BILLING' });
    expect(taken.status).toBe(422);
    expect(taken.body.errors.name).toEqual(['The name has already been taken.']);
    const other = await team({ name: 'Other' });
    const renamed = await call('PATCH', `/api/teams/${other.id}`, { name: 'billing' });
    expect(renamed.status).toBe(422);
    // A change of case of its own name is no clash.
    expect((await call('PATCH', `/api/teams/${billing.id}`, { name: 'BILLING' })).status).toBe(200);
    const race = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call('POST', '/api/teams', { name: i % 2 ? 'Race' : 'RACE' })),
    );
    expect(race.map((a) => a.status).sort()).toEqual([201, ...Array(7).fill(422)]);
    expect((await call('GET', '/api/teams')).body.data.map((t: TeamShown) => t.name)).toEqual([
      'BILLING',
      'Other',
      expect.stringMatching(/^race$/i),
    ]);
  });

  it("one membership: 20 concurrent changes from both sides leave agents' team_ids and teams' agent_ids agreeing", async () => {
    const { call, agent, team } = await setUp();
    const agents: AgentShown[] = [];
    for (let i = 0; i < 5; i++) agents.push(await agent({ email: `a${i}@desk.test`, name: `A${i}` }));
    const teams: TeamShown[] = [];
    for (let i = 0; i < 4; i++) teams.push(await team({ name: `T${i}` }));
    const pick = <T>(list: T[], seed: number) => list.filter((_, i) => (seed >> i) & 1);
    const changes = Array.from({ length: 20 }, (_, k) =>
      k % 2 === 0
        ? call('PATCH', `/api/agents/${agents[k % 5]?.id}`, {
            team_ids: pick(teams, k * 7 + 3).map((t) => t.id),
          })
        : call('PATCH', `/api/teams/${teams[k % 4]?.id}`, {
            agent_ids: pick(agents, k * 11 + 5).map((a) => a.id),
          }),
    );
    const answers = await Promise.all(changes);
    expect(
      answers.map((a) => a.status),
      answers.map((a) => a.text).join('\n'),
    ).toEqual(Array(20).fill(200));
    const agentsNow = (await call('GET', '/api/agents')).body.data as AgentShown[];
    const teamsNow = (await call('GET', '/api/teams')).body.data as TeamShown[];
    for (const t of teamsNow) {
      expect(t.agent_ids, t.name).toEqual(
        agentsNow.filter((a) => a.team_ids.includes(t.id)).map((a) => a.id),
      );
    }
    for (const a of agentsNow) {
      expect(a.team_ids, a.name).toEqual(teamsNow.filter((t) => t.agent_ids.includes(a.id)).map((t) => t.id));
    }
  });

  it('a team that is a category default is a 409 naming the category; nothing changes', async () => {
    const { call } = await setUp({
      teams: [{ name: 'Billing' }],
      agents: [{ email: 'ann@desk.test', name: 'Ann', teams: ['Billing'] }],
      categories: [{ slug: 'refunds', name: 'Refunds', default_team: 'Billing' }],
    });
    const [billing] = (await call('GET', '/api/teams')).body.data as TeamShown[];
    const refused = await call('DELETE', `/api/teams/${billing?.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('refunds');
    expect((await call('GET', `/api/teams/${billing?.id}`)).body.data).toEqual(billing);
  });

  it('If-Match on PATCH and DELETE: a stale ETag is a 412 and changes nothing', async () => {
    const { call, team } = await setUp();
    const billing = await team({ name: 'Billing' });
    await call('PATCH', `/api/teams/${billing.id}`, { name: 'Billing 2' });
    expect(
      (await call('PATCH', `/api/teams/${billing.id}`, { name: 'X' }, { 'If-Match': '"1"' })).status,
    ).toBe(412);
    expect((await call('DELETE', `/api/teams/${billing.id}`, undefined, { 'If-Match': '"1"' })).status).toBe(
      412,
    );
    expect((await call('GET', `/api/teams/${billing.id}`)).body.data.name).toBe('Billing 2');
    expect((await call('DELETE', `/api/teams/${billing.id}`, undefined, { 'If-Match': '"2"' })).status).toBe(
      200,
    );
  });

  it('Idempotency-Key: a create and a delete replayed answer as first, and change nothing more', async () => {
    const { call, events } = await setUp();
    const made = await call('POST', '/api/teams', { name: 'Billing' }, { 'Idempotency-Key': 'team-1' });
    const again = await call('POST', '/api/teams', { name: 'Billing' }, { 'Idempotency-Key': 'team-1' });
    expect(again.text).toBe(made.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const path = `/api/teams/${made.body.data.id}`;
    const gone = await call('DELETE', path, undefined, { 'Idempotency-Key': 'team-del-1' });
    const goneAgain = await call('DELETE', path, undefined, { 'Idempotency-Key': 'team-del-1' });
    expect(gone.status).toBe(200);
    expect(goneAgain.text).toBe(gone.text);
    expect((await events()).map((e) => e.type)).toEqual(['team.created', 'team.deleted']);
  });

  it('writes team.created, team.updated and team.deleted, with agent.updated for each agent that joins or leaves', async () => {
    const { call, agent, team, events } = await setUp();
    const ann = await agent({ email: 'ann@desk.test', name: 'Ann' });
    const mark = (await events()).at(-1)?.id;
    const billing = await team({ name: 'Billing', agent_ids: [ann.id] });
    const renamed = await call('PATCH', `/api/teams/${billing.id}`, { name: 'Money' });
    await call('DELETE', `/api/teams/${billing.id}`);
    const feed = await events(mark);
    // Each object's events in the order of its changes (events of one commit, of two objects, in either order).
    const teamEvents = feed.filter((e) => e.type.startsWith('team.'));
    const agentEvents = feed.filter((e) => e.type.startsWith('agent.'));
    expect(teamEvents.map((e) => e.type)).toEqual(['team.created', 'team.updated', 'team.deleted']);
    expect(agentEvents.map((e) => e.type)).toEqual(['agent.updated', 'agent.updated']);
    expect(teamEvents[0]?.data).toEqual({ object: billing, version: 1 });
    expect(teamEvents[1]?.data.previous).toEqual({ name: 'Billing', updated_at: billing.updated_at });
    expect(teamEvents[2]?.data).toEqual({ object: renamed.body.data, version: 3 });
    expect(agentEvents[0]?.data.object).toMatchObject({ id: ann.id, team_ids: [billing.id] });
    expect(agentEvents[1]?.data.object).toMatchObject({ id: ann.id, team_ids: [] });
  });

  it('needs agents:read and agents:write', async () => {
    const { account } = await setUp();
    const key = (
      await createKey(account.accountId, { name: 'deals', scopes: ['deals:write', 'agents:read'] })
    ).api_key;
    const as = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key, ...(body ? { body } : {}) });
    expect((await as('GET', '/api/teams')).status).toBe(200);
    for (const [method, path] of [
      ['POST', '/api/teams'],
      ['PATCH', '/api/teams/1'],
      ['DELETE', '/api/teams/1'],
    ] as const) {
      const refused = await as(method, path, method === 'DELETE' ? undefined : { name: 'X' });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ message: 'This key lacks the scope agents:write.' });
    }
  });

  it("another account's team is a 404; its agent in agent_ids a 422 that writes nothing; more than 30 moves a 422", async () => {
    const mine = await setUp();
    const theirs = await setUp();
    const theirTeam = await theirs.team({ name: 'Theirs' });
    const their = await theirs.agent({ email: 'them@desk.test', name: 'Them' });
    expect((await mine.call('GET', `/api/teams/${theirTeam.id}`)).status).toBe(404);
    expect((await mine.call('DELETE', `/api/teams/${theirTeam.id}`)).status).toBe(404);
    expect((await mine.call('PATCH', `/api/teams/${theirTeam.id}`, { name: '' })).status).toBe(404);
    const billing = await mine.team({ name: 'Billing' });
    const refused = await mine.call('PATCH', `/api/teams/${billing.id}`, { agent_ids: [their.id] });
    expect(refused.status).toBe(422);
    expect(refused.body.errors['agent_ids.0']).toEqual(['The selected agent id is invalid.']);
    const created = await mine.call('POST', '/api/teams', { name: 'New', agent_ids: [their.id] });
    expect(created.status).toBe(422);
    expect((await mine.call('GET', '/api/teams')).body.data).toEqual([billing]);
    expect((await theirs.call('GET', `/api/agents/${their.id}`)).body.data.team_ids).toEqual([]);
    const ids = Array.from({ length: MAX_MEMBERSHIP_CHANGES + 1 }, (_, i) => i + 1);
    const tooMany = await mine.call('PATCH', `/api/teams/${billing.id}`, { agent_ids: ids });
    expect(tooMany.status).toBe(422);
  });

  it('moves the most memberships one request may, in and out, renamed and with an Idempotency-Key: one transaction', async () => {
    // The worst case the limit is for: each agent moved writes its item, its event and (in) its queue's freed entry
    // or (out) its share of the hand-back; the team is renamed (two name items) and its answer kept.
    const { call, agent, team } = await setUp();
    const agents: AgentShown[] = [];
    for (let i = 0; i < MAX_MEMBERSHIP_CHANGES; i++)
      agents.push(await agent({ email: `m${i}@desk.test`, name: `Member ${i}` }));
    const crew = await team({ name: 'Crew' });
    const moved = await call(
      'PATCH',
      `/api/teams/${crew.id}`,
      { name: 'Crew in', agent_ids: agents.map((a) => a.id) },
      { 'Idempotency-Key': 'all-in' },
    );
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.agent_ids).toHaveLength(MAX_MEMBERSHIP_CHANGES);
    const out = await call(
      'PATCH',
      `/api/teams/${crew.id}`,
      { name: 'Crew out', agent_ids: [] },
      { 'Idempotency-Key': 'all-out' },
    );
    expect(out.status, out.text).toBe(200);
    expect(out.body.data.agent_ids).toEqual([]);
  });
});
