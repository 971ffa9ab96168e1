import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKey } from '#lib/accounts/key-making.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { type ItemWrite, measureItemWrites } from '#test/support/item-sizes.ts';

/**
 * A macro applied to a ticket (decisions.md, "Business rules": `POST /api/tickets/{ticket}/macros/{macro}`;
 * docs/rules.md, "Macros applied"): its actions and the `updated` rules they set off (`via: macro`) in one change,
 * answered as a PATCH; a dry run answers the same ticket and writes nothing; If-Match, Idempotency-Key, 404s, scope.
 */
const gateway = useGateway();
useManualClock({ lazy: true });

async function setUp() {
  const account = await createTestAccount({
    agents: agentsFile(2),
    email: { addresses: [`support-${randomUUID().slice(0, 8)}@macros.example`] },
  });
  const call = keyedCaller(gateway, account.apiKey);
  const agent = (account.agents[0] as { id: number }).id;
  const made = await call('POST', '/api/tickets', {
    subject: 'Refund please',
    description: 'I was charged twice.',
    requester_email: 'ada@customer.example',
  });
  expect(made.status, made.text).toBe(201);
  const ticket = made.body.ticket as { uuid: string; reference: string };
  const macro = await call('POST', '/api/macros', {
    name: 'Refund',
    actions: [
      { type: 'add_tags', tags: ['refund'] },
      { type: 'set', field: 'status', value: 'pending' },
      { type: 'note', body: 'Refund started for {{ticket.reference}}', agent_id: agent },
      { type: 'reply', body: 'Your refund is on its way ({{ticket.status}}).', agent_id: null },
    ],
  });
  expect(macro.status, macro.text).toBe(201);
  const rule = await call('POST', '/api/rules', {
    name: 'Macro marker',
    on: 'updated',
    conditions: { all: [{ field: 'via', op: 'is', value: 'macro' }] },
    actions: [{ type: 'add_tags', tags: ['by-macro'] }],
  });
  expect(rule.status, rule.text).toBe(201);
  const path = `/api/tickets/${ticket.uuid}/macros/${macro.body.data.id}`;
  const messages = async () =>
    (await call('GET', `/api/tickets/${ticket.uuid}/messages`)).body.data as {
      visibility: string;
      body: string;
      author: { type: string; agent_id: number | null };
    }[];
  const events = async () =>
    (await readFeedToEnd(gateway.call, account.apiKey, { types: ['ticket.updated', 'message.created'] }))
      .events;
  return {
    account,
    call,
    agent,
    ticket,
    macroId: macro.body.data.id as number,
    ruleId: rule.body.data.id,
    path,
    messages,
    events,
  };
}

describe('applying a macro', () => {
  it('a dry run answers what the real one then does and writes nothing', async () => {
    const { call, agent, ticket, ruleId, path, messages, events } = await setUp();
    const before = await events();

    const dry = await call('POST', `${path}?dry_run=true`);
    expect(dry.status, dry.text).toBe(200);
    expect(dry.headers.get('etag')).toBe('"1"');
    expect(dry.body.message).toBe('Dry run: nothing was written.');
    expect(dry.body.ticket).toMatchObject({ status: 'pending', tags: ['refund', 'by-macro'] });
    expect(dry.body.dry_run).toMatchObject({
      changes: [
        { field: 'status', from: 'open', to: 'pending' },
        { field: 'tags', from: [], to: ['refund', 'by-macro'] },
      ],
      messages: [
        {
          rule_id: null,
          visibility: 'internal',
          body: `Refund started for ${ticket.reference}`,
          agent_id: agent,
        },
        { rule_id: null, visibility: 'public', body: 'Your refund is on its way (pending).', agent_id: null },
      ],
      mail: [{ to: 'ada@customer.example', body: 'Your refund is on its way (pending).' }],
      fired: [{ id: ruleId, name: 'Macro marker' }],
      not_fired: [],
      rules_stopped: false,
      skipped: [],
    });
    // Nothing written: the ticket's version, its messages, the feed.
    const still = await call('GET', `/api/tickets/${ticket.uuid}`);
    expect(still.headers.get('etag')).toBe('"1"');
    expect(still.body.data).toMatchObject({ status: 'open', tags: [] });
    expect(await messages()).toHaveLength(1);
    expect(await events()).toEqual(before);

    // The real one, on the version the dry run read, does what it said.
    const real = await call('POST', path, undefined, { 'If-Match': dry.headers.get('etag') as string });
    expect(real.status, real.text).toBe(200);
    expect(real.headers.get('etag')).toBe('"2"');
    expect(real.body.message).toBe('Ticket updated successfully.');
    const fields = (t: Record<string, unknown>) => ({ status: t.status, tags: t.tags, assignee: t.assignee });
    expect(fields(real.body.ticket)).toEqual(fields(dry.body.ticket));
    expect((await messages()).map((m) => [m.visibility, m.body, m.author.type, m.author.agent_id])).toEqual([
      ['public', 'I was charged twice.', 'requester', null],
      ['internal', `Refund started for ${ticket.reference}`, 'agent', agent],
      ['public', 'Your refund is on its way (pending).', 'system', null],
    ]);
    const feed = (await events()).slice(before.length);
    const rules = [{ id: ruleId, version: 1 }];
    expect(feed.map((e) => [e.type, (e.data as Record<string, unknown>).rules])).toEqual([
      ['ticket.updated', rules],
      ['message.created', rules],
      ['message.created', rules],
    ]);
    expect(feed[0]?.data.previous).toMatchObject({ status: 'open', tags: [] });
    // The rule's firing was written with the change.
    expect((await call('GET', `/api/rules/${ruleId}`)).body.data.fired.last_hour).toBe(1);
  });

  it('If-Match refuses a stale version; an Idempotency-Key retry answers the same and applies once', async () => {
    const { call, ticket, path, messages } = await setUp();
    const stale = await call('POST', path, undefined, { 'If-Match': '"7"' });
    expect(stale.status, stale.text).toBe(412);
    const dryStale = await call('POST', `${path}?dry_run=true`, undefined, { 'If-Match': '"7"' });
    expect(dryStale.status).toBe(412);

    const key = { 'Idempotency-Key': `apply-${randomUUID()}` };
    const first = await call('POST', path, undefined, key);
    expect(first.status, first.text).toBe(200);
    const again = await call('POST', path, undefined, key);
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(await messages()).toHaveLength(3);
    expect((await call('GET', `/api/tickets/${ticket.uuid}`)).headers.get('etag')).toBe('"2"');

    // A dry run and the real application are two requests: one key cannot serve both.
    const both = { 'Idempotency-Key': `both-${randomUUID()}` };
    expect((await call('POST', `${path}?dry_run=true`, undefined, both)).status).toBe(200);
    const reused = await call('POST', path, undefined, both);
    expect(reused.status).toBe(422);
    expect(reused.body.errors).toHaveProperty('idempotency_key');
  });

  it('an unknown or other account’s macro or ticket is a 404; a closed ticket a 422; needs tickets:write', async () => {
    const { account, call, ticket, macroId, path } = await setUp();
    expect((await call('POST', `/api/tickets/${ticket.uuid}/macros/999999`)).status).toBe(404);
    expect((await call('POST', `/api/tickets/${ticket.uuid}/macros/abc`)).status).toBe(404);
    expect((await call('POST', `/api/tickets/${randomUUID()}/macros/${macroId}`)).status).toBe(404);
    // Another account's: its ticket, and a macro id only it holds.
    const other = await setUp();
    const extra = await other.call('POST', '/api/macros', {
      name: 'Only theirs',
      actions: [{ type: 'add_tags', tags: ['theirs'] }],
    });
    expect(extra.status, extra.text).toBe(201);
    expect(extra.body.data.id).toBeGreaterThan(macroId);
    expect((await call('POST', `/api/tickets/${ticket.uuid}/macros/${extra.body.data.id}`)).status).toBe(404);
    expect((await other.call('POST', path)).status).toBe(404);
    expect((await other.call('POST', `${path}?dry_run=true`)).status).toBe(404);

    const reader = (await createKey(account.accountId, { name: 'reader', scopes: ['tickets:read'] as never }))
      .api_key;
    const refused = await gateway.call('POST', path, { key: reader });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ message: 'This key lacks the scope tickets:write.' });

    expect((await call('PATCH', `/api/tickets/${ticket.uuid}`, { status: 'closed' })).status).toBe(200);
    const closed = await call('POST', path);
    expect(closed.status).toBe(422);
    expect(closed.body.errors).toEqual({ status: ['A closed ticket cannot be changed.'] });
    expect((await call('POST', `${path}?dry_run=maybe`)).status).toBe(422);
  });

  it('"auto" in a dry run shows the agent the real one picks, and takes no round-robin turn', async () => {
    const account = await createTestAccount({
      agents: agentsFile(3),
      auto_assignment: { enabled: true, method: 'round_robin' },
    });
    const call = keyedCaller(gateway, account.apiKey);
    const made = await call('POST', '/api/tickets', {
      subject: 'Hand it on',
      description: 'Someone please.',
      requester_email: 'ada@customer.example',
    });
    expect(made.status, made.text).toBe(201);
    const first = made.body.ticket.assignee?.id;
    const macro = await call('POST', '/api/macros', {
      name: 'Reassign',
      actions: [{ type: 'set', field: 'assignee_id', value: 'auto' }],
    });
    const path = `/api/tickets/${made.body.ticket.uuid}/macros/${macro.body.data.id}`;
    const dry = await call('POST', `${path}?dry_run=true`);
    expect(dry.status, dry.text).toBe(200);
    const again = await call('POST', `${path}?dry_run=true`);
    const predicted = dry.body.ticket.assignee?.id;
    expect(predicted).toBeDefined();
    expect(predicted).not.toBe(first);
    expect(again.body.ticket.assignee?.id).toBe(predicted);
    const real = await call('POST', path);
    expect(real.status, real.text).toBe(200);
    expect(real.body.ticket.assignee?.id).toBe(predicted);
  });

  it('writes what docs/capacity.md counts: the dry run only its rate count, the real one one commit', async () => {
    const { account, call, path } = await setUp();
    const measure = async (work: () => Promise<unknown>) => {
      const writes = await measureItemWrites(work, [account.accountId]);
      const units = (ws: ItemWrite[]) => ws.reduce((n, w) => n + w.writeUnits, 0);
      const inCommit = writes.filter((w) => w.transactional);
      return { writes, inCommit, units };
    };
    const dry = await measure(() => call('POST', `${path}?dry_run=true`));
    expect(dry.inCommit).toEqual([]);
    expect(dry.writes.map((w) => w.shape)).toEqual([expect.stringMatching(/RATE/)]);
    const real = await measure(() => call('POST', path));
    const shapes = real.inCommit.map((w) => `${w.operation} ${w.shape}`).sort();
    console.log(
      `macro applied (tags, status, a note, a reply, one rule firing): ${real.writes.length} items ` +
        `(${real.inCommit.length} in the commit), ${real.units(real.writes)} WU ` +
        `(${real.units(real.inCommit)} in the commit)\n  ${shapes.join('\n  ')}`,
    );
    const outside = real.writes.filter((w) => !w.transactional).map((w) => `${w.operation} ${w.shape}`);
    console.log(`  outside the commit: ${outside.join(', ')}`);
    // The ticket, its index moves (status open → pending: its queue's posting and its sorted one, its block),
    // 2 messages, 1 firing, 3 events.
    expect(real.inCommit).toHaveLength(14);
    expect(shapes.filter((s) => /TICKET_MESSAGES|RULE_FIRED|EVENTS/.test(s))).toHaveLength(6);
  });
});
