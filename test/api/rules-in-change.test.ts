import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { raiseRulesVersion } from '#lib/data/accounts/config-version.ts';
import { readRulesMeta, storedRules, writeRule } from '#lib/data/rules/rules.ts';
import type { Rule } from '#lib/rules/types.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';

/**
 * Rules evaluated inside the change they react to (decisions.md, "Business rules"; docs/rules.md, "In the change's
 * transaction"): a PATCH, a message and a create commit with every effect of their rules (fields, tags, team,
 * notes and replies with their events), the events name the rules that fired, the cap stops a chain and says so,
 * and a change that changes nothing runs no rule.
 */
const gateway = useGateway();
const clock = useManualClock({ lazy: true });

async function setUp() {
  const account = await createTestAccount({
    agents: agentsFile(2),
    teams: [{ name: 'Billing' }],
    email: { addresses: [`support-${randomUUID().slice(0, 8)}@rules.example`] },
  });
  const call = keyedCaller(gateway, account.apiKey);
  const teams = (await call('GET', '/api/teams')).body.data as { id: number }[];
  const team = (teams[0] as { id: number }).id;
  const agent = (account.agents[0] as { id: number }).id;
  const rule = async (body: Record<string, unknown>) => {
    const r = await call('POST', '/api/rules', { name: 'rule', ...body });
    expect(r.status, r.text).toBe(201);
    return r.body.data as { id: number; version: number };
  };
  const ticket = async (body: Record<string, unknown> = {}) => {
    const r = await call('POST', '/api/tickets', {
      subject: 'Where is my invoice',
      description: 'Please send it again.',
      requester_email: 'ada@customer.example',
      ...body,
    });
    expect(r.status, r.text).toBe(201);
    return r.body.ticket as { uuid: string; reference: string; tags: string[] };
  };
  const events = async (account: TestAccount, types: string[]) =>
    (await readFeedToEnd(gateway.call, account.apiKey, { types })).events;
  return { account, call, team, agent, rule, ticket, events };
}

const ruleData = (e: FeedEvent) => (e.data as Record<string, unknown>).rules;

describe('rules in the change', () => {
  it('a PATCH commits with its rules: fields, a note and a reply, each event naming the rules', async () => {
    const { account, call, team, agent, rule, ticket, events } = await setUp();
    const escalate = await rule({
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed_to', value: 'urgent' }] },
      actions: [
        { type: 'add_tags', tags: ['escalated'] },
        { type: 'set', field: 'team_id', value: team },
        { type: 'note', body: 'Escalated {{ticket.reference}}', agent_id: agent },
      ],
    });
    const answer = await rule({
      on: 'updated',
      conditions: { all: [{ field: 'tags', op: 'contains', value: 'escalated' }] },
      actions: [{ type: 'reply', body: 'We are on it ({{ticket.status}}).', agent_id: agent }],
    });
    const made = await ticket();
    const patched = await call('PATCH', `/api/tickets/${made.uuid}`, { priority: 'urgent' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.ticket).toMatchObject({
      priority: 'urgent',
      tags: ['escalated'],
      team: { id: team },
    });
    expect(patched.headers.get('etag')).toBe('"2"');

    const messages = (await call('GET', `/api/tickets/${made.uuid}/messages`)).body.data as {
      visibility: string;
      body: string;
      author: { agent_id: number | null };
      email?: { delivery: { status: string }; to: string[] };
    }[];
    expect(messages.map((m) => [m.visibility, m.body, m.author.agent_id])).toEqual([
      ['public', 'Please send it again.', null],
      ['internal', `Escalated ${made.reference}`, agent],
      ['public', 'We are on it (open).', agent],
    ]);
    expect(messages[2]?.email).toMatchObject({
      to: ['ada@customer.example'],
      delivery: { status: 'queued' },
    });

    const feed = await events(account, ['ticket.updated', 'message.created']);
    const fired = [
      { id: escalate.id, version: 1 },
      { id: answer.id, version: 1 },
    ];
    expect(feed.map((e) => [e.type, ruleData(e)])).toEqual([
      ['ticket.updated', fired],
      ['message.created', fired],
      ['message.created', fired],
    ]);
    expect(feed[0]?.data.previous).toMatchObject({ priority: 'medium', tags: [], team: null });
    // Each rule's firing was written with the change: its `fired` counts it.
    for (const fired of [escalate, answer]) {
      const counted = (await call('GET', `/api/rules/${fired.id}`)).body.data.fired;
      expect(counted).toEqual({ last_hour: 1, last_day: 1, last_week: 1 });
    }
  });

  it('a change that changes nothing runs no rule; one that does not match fires none and says nothing', async () => {
    const { account, call, rule, ticket, events } = await setUp();
    await rule({
      on: 'updated',
      conditions: { all: [{ field: 'status', op: 'is', value: 'open' }] },
      actions: [{ type: 'add_tags', tags: ['touched'] }],
    });
    const made = await ticket({ priority: 'high' });
    const same = await call('PATCH', `/api/tickets/${made.uuid}`, { priority: 'high' });
    expect(same.body.ticket.tags).toEqual([]);
    expect(same.headers.get('etag')).toBe('"1"');
    const solved = await call('PATCH', `/api/tickets/${made.uuid}`, { status: 'resolved' });
    expect(solved.body.ticket.tags).toEqual([]);
    const feed = await events(account, ['ticket.updated']);
    expect(feed.map((e) => ruleData(e))).toEqual([undefined]);
  });

  it('the cap: eleven rules that would all fire, ten fire, the change commits, the event says so', async () => {
    const { account, call, rule, ticket, events } = await setUp();
    const rules = [];
    for (let i = 0; i < 11; i++) {
      rules.push(
        await rule({
          on: 'updated',
          conditions: { all: [{ field: 'priority', op: 'is', value: 'low' }] },
          actions: [{ type: 'add_tags', tags: [`t${i}`] }],
        }),
      );
    }
    const made = await ticket();
    const patched = await call('PATCH', `/api/tickets/${made.uuid}`, { priority: 'low' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.ticket.tags).toHaveLength(10);
    const [updated] = await events(account, ['ticket.updated']);
    const data = updated?.data as Record<string, unknown>;
    expect(data.rules).toEqual(rules.slice(0, 10).map((r) => ({ id: r.id, version: 1 })));
    expect(data.rules_stopped).toBe(true);
    const listed = (await call('GET', '/api/rules?limit=100')).body.data as {
      fired: { last_hour: number };
    }[];
    expect(listed.map((r) => r.fired.last_hour)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
  });

  it('two rules that would loop fire once each and the change commits', async () => {
    const { call, rule, ticket } = await setUp();
    await rule({
      on: 'updated',
      conditions: { all: [{ field: 'status', op: 'is', value: 'open' }] },
      actions: [{ type: 'set', field: 'status', value: 'pending' }],
    });
    await rule({
      on: 'updated',
      conditions: { all: [{ field: 'status', op: 'is', value: 'pending' }] },
      actions: [{ type: 'set', field: 'status', value: 'open' }],
    });
    const made = await ticket();
    const patched = await call('PATCH', `/api/tickets/${made.uuid}`, { priority: 'high' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.ticket.status).toBe('open');
    expect(patched.headers.get('etag')).toBe('"2"');
  });

  it("a create runs its created rules: routed, tagged, a note, in the create's own events", async () => {
    const { account, call, team, agent, rule, ticket, events } = await setUp();
    const route = await rule({
      on: 'created',
      conditions: { all: [{ field: 'subject', op: 'contains', value: 'INVOICE' }] },
      actions: [
        { type: 'set', field: 'team_id', value: team },
        { type: 'set', field: 'assignee_id', value: agent },
        { type: 'add_tags', tags: ['billing'] },
        { type: 'note', body: 'Routed to billing.' },
      ],
    });
    const made = await ticket();
    expect(made).toMatchObject({ tags: ['billing'], team: { id: team }, assignee: { id: agent } });
    const other = await ticket({ subject: 'Password reset' });
    expect(other).toMatchObject({ tags: [], team: null });
    const messages = (await call('GET', `/api/tickets/${made.uuid}/messages`)).body.data as {
      body: string;
      author: { type: string; agent_id: number | null };
    }[];
    // The note's author: the action names none, so the ticket's assignee after the change.
    expect(messages.map((m) => [m.body, m.author.agent_id])).toEqual([
      ['Please send it again.', null],
      ['Routed to billing.', agent],
    ]);
    const feed = await events(account, ['ticket.created', 'message.created']);
    const of = (uuid: string) =>
      feed
        .filter((e) => (e.data.object.uuid ?? e.data.object.ticket_uuid) === uuid)
        .map((e) => [e.type, ruleData(e)]);
    expect(of(made.uuid)).toEqual([
      ['ticket.created', [{ id: route.id, version: 1 }]],
      ['message.created', [{ id: route.id, version: 1 }]],
    ]);
    expect(of(other.uuid)).toEqual([['ticket.created', undefined]]);
  });

  it("a message runs its message rules: tagged, and the reply ends the requester's wait", async () => {
    const { account, call, agent, rule, ticket, events } = await setUp();
    const refund = await rule({
      on: 'message',
      conditions: {
        all: [
          { field: 'message.author', op: 'is', value: 'requester' },
          { field: 'message.body', op: 'contains', value: 'refund' },
        ],
      },
      actions: [
        { type: 'add_tags', tags: ['refund'] },
        { type: 'reply', body: 'We got your refund request for {{ticket.reference}}.', agent_id: agent },
      ],
    });
    const made = await ticket();
    const posted = await call('POST', `/api/tickets/${made.uuid}/messages`, {
      body: 'I want a refund please',
      author: 'requester',
    });
    expect(posted.status, posted.text).toBe(201);
    const got = (await call('GET', `/api/tickets/${made.uuid}`)).body.data;
    expect(got.tags).toEqual(['refund']);
    // The reply answered the requester: they no longer wait.
    expect(got.waiting_since).toBeNull();
    const messages = (await call('GET', `/api/tickets/${made.uuid}/messages`)).body.data as {
      body: string;
    }[];
    expect(messages.map((m) => m.body)).toEqual([
      'Please send it again.',
      'I want a refund please',
      `We got your refund request for ${made.reference}.`,
    ]);
    const feed = await events(account, ['message.created', 'ticket.updated']);
    expect(feed.map((e) => [e.type, ruleData(e)])).toEqual([
      ['message.created', [{ id: refund.id, version: 1 }]],
      ['ticket.updated', [{ id: refund.id, version: 1 }]],
      ['message.created', [{ id: refund.id, version: 1 }]],
    ]);
  });

  it('a rule that sets an organization reads it (one BatchGet) and writes it with the change', async () => {
    const { call, rule, ticket } = await setUp();
    const org = await call('POST', '/api/organizations', { name: 'Acme', domains: ['acme-rules.example'] });
    expect(org.status, org.text).toBe(201);
    await rule({
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed_to', value: 'high' }] },
      actions: [{ type: 'set', field: 'organization_id', value: org.body.data.id }],
    });
    const made = await ticket();
    const patched = await call('PATCH', `/api/tickets/${made.uuid}`, { priority: 'high' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.ticket.organization).toEqual({ id: org.body.data.id, name: 'Acme' });
  });

  /**
   * A rule that tags every priority change, and a PATCH's tags (cleared after); then the rule deactivated as another
   * container writes it (this container's cache is not told; the write's own raise of the version is what moves).
   */
  async function seenRule() {
    const { account, call, rule, ticket } = await setUp();
    const made = await rule({
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed' }] },
      actions: [{ type: 'add_tags', tags: ['seen'] }],
    });
    const t = await ticket();
    const tagsAfter = async (priority: string) => {
      const patched = await call('PATCH', `/api/tickets/${t.uuid}`, { priority });
      expect(patched.status, patched.text).toBe(200);
      const { tags } = patched.body.ticket;
      await call('PATCH', `/api/tickets/${t.uuid}`, { tags: [] });
      return tags;
    };
    const [stored] = (await storedRules(account.accountId)) as [Rule];
    const meta = await readRulesMeta(account.accountId);
    const deactivate = () =>
      writeRule(
        account.accountId,
        { before: stored, after: { ...stored, active: false }, meta },
        {
          event: { type: 'rule.updated', object: {}, version: made.version + 1 },
          sweepAtMs: clock().nowMs(),
        },
      );
    return { account, meta, tagsAfter, deactivate };
  }

  it("another container's rule write applies to the next request at once (its rules version moved)", async () => {
    const { tagsAfter, deactivate } = await seenRule();
    expect(await tagsAfter('low')).toEqual(['seen']);
    await deactivate();
    // No time passes: the next PATCH reads the rules again (the write raised the version), and the rule no longer fires.
    expect(await tagsAfter('high')).toEqual([]);
  });

  it('a container that reads the rules between a write raising the version and its commit keeps them 5 s at most', async () => {
    const { account, meta, tagsAfter, deactivate } = await seenRule();
    // Another container's write raised the version and has not committed yet: this one reads the rules as they are.
    await raiseRulesVersion(account.accountId, meta.version + 1);
    expect(await tagsAfter('low')).toEqual(['seen']);
    // The commit lands (its answer lost with its container: nothing runs after it).
    await deactivate();
    // The rules read before the commit serve no request that starts more than 5 s after it.
    await clock().advance(5_100);
    expect(await tagsAfter('high')).toEqual([]);
  });
});
