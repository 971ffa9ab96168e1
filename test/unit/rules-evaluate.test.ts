import { describe, expect, it } from 'vitest';
import { type ChangeContext, evaluateRules } from '#lib/rules/evaluate.ts';
import { applyMacro } from '#lib/rules/macros.ts';
import { presentOutcomes } from '#lib/rules/present.ts';
import type { Rule } from '#lib/rules/types.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { context, directory, MINUTE, rule, T0, ticket, ts } from '#test/support/rules.ts';

const tag = (t: string) => ({ type: 'add_tags', tags: [t] });
const when = (field: string, op: string, value?: unknown) => ({
  field,
  op,
  ...(value === undefined ? {} : { value }),
});

function run(
  rules: Rule[],
  after: Ticket,
  fields: Partial<ChangeContext> = {},
  before: Ticket | null = after,
) {
  return evaluateRules({ before, after, context: context(fields), rules, directory });
}

describe('evaluating rules', () => {
  it('routes and tags billing mail on create, renders the reply with the ticket as the change leaves it', () => {
    const billing = rule({
      on: 'created',
      conditions: { all: [when('via', 'is', 'email'), when('subject', 'contains', 'INVOICE')] },
      actions: [
        { type: 'set', field: 'team_id', value: 1 },
        { type: 'set', field: 'assignee_id', value: 'auto' },
        tag('billing'),
        {
          type: 'reply',
          body: 'Hi {{requester.name}}, {{ticket.reference}} is {{ticket.status}} with {{agent.name}}.',
        },
      ],
    });
    const pend = rule({
      on: 'created',
      conditions: { all: [when('tags', 'contains', 'Billing')] },
      actions: [{ type: 'set', field: 'status', value: 'pending' }],
    });
    const result = run([pend, billing], ticket(), { kind: 'create', channel: 'email' }, null);
    expect(result.fired.map((r) => r.id)).toEqual([billing.id, pend.id]);
    expect(result.ticket).toMatchObject({
      team: { id: 1, name: 'Billing' },
      assignee: { id: 1 },
      tags: ['billing'],
      status: 'pending',
    });
    expect(result.ticket.statusChangedAt).toBe(ts(T0 + MINUTE));
    expect(result.messages).toEqual([
      { ruleId: billing.id, type: 'reply', body: 'Hi Rita, TKT-000001 is pending with Ann.', agentId: 1 },
    ]);
    expect(result.changes.map((c) => c.field)).toEqual(['status', 'team_id', 'assignee_id', 'tags']);
    expect(result.stopped).toBe(false);
    // The same ticket by the API: the rule's `via` condition fails, and rules/test says so with the value.
    const viaApi = run([billing], ticket(), { kind: 'create', channel: 'api' }, null);
    expect(viaApi.fired).toEqual([]);
    expect(presentOutcomes(viaApi)).toEqual({
      fired: [],
      not_fired: [
        {
          id: billing.id,
          name: billing.name,
          failed: [{ path: 'conditions.all.0', field: 'via', op: 'is', value: 'email', actual: 'api' }],
        },
      ],
    });
    expect(presentOutcomes(result).fired[0]).toEqual({
      id: billing.id,
      name: billing.name,
      matched: [
        { path: 'conditions.all.0', field: 'via', op: 'is', value: 'email' },
        { path: 'conditions.all.1', field: 'subject', op: 'contains', value: 'INVOICE' },
      ],
    });
    expect(viaApi.outcomes).toEqual([
      {
        rule: expect.objectContaining({ id: billing.id }),
        fired: false,
        reason: 'conditions',
        failed: { path: 'conditions.all.0', condition: when('via', 'is', 'email'), actual: 'api' },
      },
    ]);
  });

  it('looks again at a rule passed over once a later one fires, so order cannot stop a chain', () => {
    const second = rule({
      on: 'updated',
      position: 1,
      conditions: { all: [when('tags', 'contains', 'a')] },
      actions: [tag('b')],
    });
    const first = rule({
      on: 'updated',
      position: 2,
      conditions: { all: [when('priority', 'is', 'urgent')] },
      actions: [tag('a')],
    });
    const result = run([second, first], ticket({ priority: 'urgent' }));
    expect(result.fired.map((r) => r.id)).toEqual([first.id, second.id]);
    expect(result.ticket.tags).toEqual(['a', 'b']);
  });

  it('fires each rule once: two rules that would loop (pending ↔ open) stop on their own and commit', () => {
    const toPending = rule({
      on: 'updated',
      conditions: { all: [when('status', 'is', 'open')] },
      actions: [{ type: 'set', field: 'status', value: 'pending' }],
    });
    const toOpen = rule({
      on: 'updated',
      conditions: { all: [when('status', 'is', 'pending')] },
      actions: [{ type: 'set', field: 'status', value: 'open' }],
    });
    const result = run([toPending, toOpen], ticket());
    expect(result.fired.map((r) => r.id)).toEqual([toPending.id, toOpen.id]);
    expect(result.ticket.status).toBe('open');
    expect(result.stopped).toBe(false);
  });

  it('stops at 10 fired rules, says so, and names the rule the cap stopped', () => {
    const chain = Array.from({ length: 12 }, (_, i) =>
      rule({
        on: 'updated',
        position: i,
        conditions: { all: i === 0 ? [] : [when('tags', 'contains', `t${i - 1}`)] },
        actions: [tag(`t${i}`)],
      }),
    );
    const result = run(chain, ticket());
    expect(result.fired).toHaveLength(10);
    expect(result.stopped).toBe(true);
    expect(result.outcomes.map((o) => (o.fired ? 'fired' : o.reason))).toEqual([
      ...Array(10).fill('fired'),
      'stopped',
      'conditions',
    ]);
  });

  it('compares before and after the change: changed, changed_from, changed_to, tags added and removed', () => {
    const before = ticket({ status: 'open', tags: ['vip', 'old'] });
    const after = { ...before, status: 'resolved' as const, tags: ['VIP', 'new'] };
    const cases: [Record<string, unknown>, boolean][] = [
      [when('status', 'changed'), true],
      [when('status', 'changed_from', 'open'), true],
      [when('status', 'changed_from', 'pending'), false],
      [when('status', 'changed_to', 'resolved'), true],
      [when('priority', 'changed'), false],
      [when('tags', 'changed_to', 'new'), true],
      [when('tags', 'changed_from', 'old'), true],
      [when('tags', 'changed_to', 'vip'), false],
    ];
    for (const [c, fires] of cases) {
      const r = rule({ on: 'updated', conditions: { all: [c] }, actions: [tag('x')] });
      expect(run([r], after, {}, before).fired.length, JSON.stringify(c)).toBe(fires ? 1 : 0);
    }
  });

  it('never replies to automatic mail, nor past 3 rule replies a ticket an hour, and lists the skipped replies', () => {
    const replies = Array.from({ length: 3 }, (_, i) =>
      rule({
        on: 'message',
        position: i,
        actions: [{ type: 'reply', body: `r${i}` }, ...(i === 2 ? [tag('seen')] : [])],
      }),
    );
    const message = { author: 'requester' as const, visibility: 'public' as const, body: 'thanks' };
    const auto = run(replies, ticket(), { kind: 'message', channel: 'email', automatic: true, message });
    expect(auto.messages).toEqual([]);
    expect(auto.skipped.map((s) => s.reason)).toEqual(['automatic_mail', 'automatic_mail', 'automatic_mail']);
    // A reply skipped is no firing: only the rule that also tagged fired.
    expect(auto.fired.map((r) => r.id)).toEqual([replies[2]?.id]);
    expect(auto.outcomes.map((o) => (o.fired ? 'fired' : o.reason))).toEqual(['skipped', 'skipped', 'fired']);
    const late = run(replies, ticket(), { kind: 'message', message, ruleRepliesLastHour: 2 });
    expect(late.messages.map((m) => m.body)).toEqual(['r0']);
    expect(late.skipped).toEqual([
      { id: replies[1]?.id, reason: 'replies_per_hour' },
      { id: replies[2]?.id, reason: 'replies_per_hour' },
    ]);
  });

  it('reads the message on message rules', () => {
    const r = rule({
      on: 'message',
      conditions: {
        all: [when('message.author', 'is', 'requester'), when('message.body', 'contains', 'refund')],
      },
      actions: [tag('refund')],
    });
    const msg = (body: string) => ({
      kind: 'message' as const,
      message: { author: 'requester' as const, visibility: 'public' as const, body },
    });
    expect(run([r], ticket(), msg('A REFUND please')).ticket.tags).toEqual(['refund']);
    expect(run([r], ticket(), msg('thanks')).ticket.tags).toEqual([]);
  });

  it('runs no rule on an import, and only the active rules of the change kind', () => {
    const r = rule({ on: 'created', actions: [tag('x')] });
    expect(run([r], ticket(), { kind: 'create', imported: true }, null)).toMatchObject({
      fired: [],
      outcomes: [],
      ticket: ticket(),
    });
    expect(run([r], ticket(), { kind: 'update' }).fired).toEqual([]);
    expect(run([{ ...r, active: false }], ticket(), { kind: 'create' }, null).fired).toEqual([]);
  });

  it('skips what cannot apply: a gone team, a closed ticket; a rule whose every action skipped did not fire', () => {
    const gone = rule({ on: 'updated', actions: [{ type: 'set', field: 'team_id', value: 2 }] });
    const noTeam = evaluateRules({
      before: ticket(),
      after: ticket(),
      context: context(),
      rules: [gone],
      directory: { ...directory, team: () => undefined },
    });
    expect(noTeam.fired).toEqual([]);
    expect(noTeam.skipped).toEqual([{ id: gone.id, reason: 'gone' }]);
    const closing = rule({
      on: 'updated',
      position: 0,
      actions: [{ type: 'set', field: 'status', value: 'closed' }, tag('late')],
    });
    const closed = run([closing], ticket());
    expect(closed.ticket).toMatchObject({
      status: 'closed',
      tags: [],
      closedAt: ts(T0 + MINUTE),
      resolvedAt: ts(T0 + MINUTE),
    });
    expect(closed.skipped).toEqual([{ id: closing.id, reason: 'closed' }]);
  });
});

describe('macros', () => {
  it('apply in one change, then the updated rules run with via macro; a dry run is the same call', () => {
    const macro = {
      actions: [
        { type: 'set' as const, field: 'status', value: 'resolved' },
        { type: 'note' as const, body: 'Closed by {{agent.name}}', agentId: 2 },
      ],
    };
    const onMacro = rule({
      on: 'updated',
      conditions: { all: [when('via', 'is', 'macro'), when('status', 'changed_to', 'resolved')] },
      actions: [tag('done')],
    });
    const change = { ticket: ticket(), macro, context: context(), rules: [onMacro], directory };
    const applied = applyMacro(change);
    expect(applied.ticket).toMatchObject({ status: 'resolved', tags: ['done'] });
    expect(applied.messages).toEqual([{ ruleId: null, type: 'note', body: 'Closed by Bob', agentId: 2 }]);
    expect(applied.changes.map((c) => c.field)).toEqual(['status', 'tags']);
    expect(applied.rules.fired.map((r) => r.id)).toEqual([onMacro.id]);
    expect(applyMacro(change)).toEqual(applied);
  });
});
