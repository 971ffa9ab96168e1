import { describe, expect, it } from 'vitest';
import { type Evaluation, evaluateRules } from '#lib/rules/evaluate.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { seededRandom } from '#test/support/random.ts';
import {
  AGENTS,
  type MAction,
  type MChange,
  type MCondition,
  type MResult,
  type MRule,
  type MTicket,
  modelEvaluate,
  TEAMS,
  type Value,
} from '#test/support/rule-model.ts';
import { context, directory, organizations, rule, ticket, world } from '#test/support/rules.ts';

/**
 * The evaluator against a model written apart (test/support/rule-model.ts): random rule sets (every rule one the
 * API accepts: made through parseRule), random tickets and random changes; the ticket after, what fired, the cap,
 * the skipped actions, the messages and each rule's why-not must all be the model's.
 */

const RUNS = 500;
const STATUSES = ['open', 'pending', 'in_progress', 'resolved', 'closed'];
const PRIORITIES = ['low', 'medium', 'high', 'urgent'];
const TAGS = ['a', 'b', 'VIP', 'vip', 'c'];

type Random = ReturnType<typeof seededRandom>;

function randomCondition(r: Random, on: string): MCondition {
  const change = on === 'updated' && r.chance(0.3);
  const pools: [string, Value[], string[]][] = [
    ['status', STATUSES, ['is', 'is_not', 'in', 'not_in']],
    ['priority', PRIORITIES, ['is', 'in', 'not_in']],
    ['team_id', [1, 2, null], ['is', 'is_not', 'in']],
    ['assignee_id', [1, 2, 3, null], ['is', 'in', 'present', 'absent']],
    ['category', ['billing', 'tech', null], ['is', 'is_not', 'present']],
    ['organization_id', [7, null], ['is', 'absent']],
    ['tags', TAGS, ['contains', 'not_contains', 'in', 'not_in', 'present', 'absent']],
    ['subject', ['invoice', 'INVOICE question', 'refund'], ['contains', 'not_contains', 'is']],
    ['custom_fields.plan', ['gold', 3, 'OL', true], ['is', 'is_not', 'contains', 'present', 'absent']],
    ['via', ['api', 'email', 'macro'], ['is', 'is_not']],
    ['channel', ['api', 'email'], ['is']],
  ];
  if (on === 'message') {
    pools.push(
      ['message.author', ['agent', 'requester'], ['is']],
      ['message.body', ['help', 'thanks'], ['contains']],
    );
  }
  const [field, values, ops] = r.pick(pools);
  const op = change ? r.pick(['changed', 'changed_from', 'changed_to']) : r.pick(ops);
  const nonNull = values.filter((x) => x !== null);
  if (op === 'present' || op === 'absent' || op === 'changed') return { field, op };
  if (op === 'in' || op === 'not_in') return { field, op, value: [r.pick(values), r.pick(values)] };
  if (op === 'contains' || op === 'not_contains') {
    return { field, op, value: r.pick(nonNull.filter((x) => typeof x === 'string')) };
  }
  if (field === 'tags') return { field, op, value: r.pick(nonNull) };
  return { field, op, value: r.pick(values) };
}

function randomAction(r: Random): MAction {
  const body = r.pick([
    'Re {{ticket.reference}}: {{ticket.status}}',
    'Hi {{ requester.name }} from {{agent.name}}',
    'ok',
  ]);
  const agent = r.chance(0.5) ? { agent_id: r.pick([1, 2]) } : {};
  return r.pick<() => MAction>([
    () => ({ type: 'set', field: 'status', value: r.pick(STATUSES) }),
    () => ({ type: 'set', field: 'priority', value: r.pick(PRIORITIES) }),
    () => ({ type: 'set', field: 'team_id', value: r.pick([1, 2, null]) }),
    () => ({ type: 'set', field: 'assignee_id', value: r.pick([1, 2, null, 'auto']) }),
    () => ({ type: 'set', field: 'category', value: r.pick(['billing', 'tech', null]) }),
    () => ({ type: 'set', field: 'organization_id', value: r.pick([7, null]) }),
    () => ({ type: 'set', field: 'custom_fields.plan', value: r.pick(['gold', 3, null, 'Gold']) }),
    () => ({ type: 'add_tags', tags: [r.pick(TAGS)] }),
    () => ({ type: 'remove_tags', tags: [r.pick(TAGS)] }),
    () => ({ type: 'note', body, ...agent }),
    () => ({ type: 'reply', body, ...agent }),
  ])();
}

/** Rules of every kind; one run in five, a dense set of the change's own kind with few conditions (the cap's). */
function randomRules(r: Random, change: MChange): MRule[] {
  const dense = r.chance(0.2);
  const own = { create: 'created', update: 'updated', macro: 'updated', message: 'message' }[change.kind];
  return Array.from({ length: dense ? 11 + r.int(4) : 1 + r.int(10) }, (_, i) => {
    const on = dense || r.chance(0.5) ? own : r.pick(['created', 'updated', 'message']);
    return {
      id: 100 + i,
      position: r.int(4),
      active: r.chance(0.9),
      on,
      conditions: {
        all: Array.from({ length: r.int(dense ? 2 : 3) }, () => randomCondition(r, on)),
        any: Array.from({ length: r.chance(0.3) ? 1 + r.int(2) : 0 }, () => randomCondition(r, on)),
      },
      actions: Array.from({ length: 1 + r.int(3) }, () => randomAction(r)),
    };
  });
}

function randomTicket(r: Random): MTicket {
  return {
    reference: 'TKT-000042',
    requesterName: r.pick(['Rita', null]),
    subject: r.pick(['Invoice question', 'Refund please', 'Login broken']),
    description: 'd',
    email: 'rita@customer.test',
    channel: r.pick(['api', 'email']),
    status: r.pick([...STATUSES.slice(0, 4), ...STATUSES.slice(0, 4), 'closed']),
    priority: r.pick(PRIORITIES),
    category: r.pick(['billing', 'tech', null]),
    team: r.pick([1, 2, null]),
    assignee: r.pick([1, 2, null]),
    org: r.pick([7, null]),
    tags: TAGS.filter(() => r.chance(0.3)).filter(
      (t, i, all) => all.findIndex((u) => u.toLowerCase() === t.toLowerCase()) === i,
    ),
    custom: r.chance(0.5) ? { plan: r.pick(['gold', 3, 'bronze']) } : {},
  };
}

function randomChange(r: Random): MChange {
  const kind = r.pick(['create', 'update', 'message', 'macro'] as const);
  const before = randomTicket(r);
  const after =
    kind === 'create' || kind === 'message'
      ? before
      : {
          ...before,
          status: r.pick(STATUSES.slice(0, 4)),
          tags: r.chance(0.5) ? [...before.tags, 'c'] : before.tags.slice(1),
        };
  return {
    kind,
    before: kind === 'create' ? null : before,
    after,
    channel: r.pick(['api', 'email']),
    automatic: r.chance(0.2),
    imported: r.chance(0.05),
    repliesLastHour: r.int(5),
    ...(kind === 'message'
      ? {
          message: {
            author: r.pick(['agent', 'requester']),
            visibility: r.pick(['public', 'internal']),
            body: r.pick(['Help!', 'thanks']),
          },
        }
      : {}),
  };
}

const agentOf = (id: number | null) =>
  id === null ? null : { id, name: AGENTS[id] ?? '', email: `${id}@desk.test` };

function toTicket(m: MTicket): Ticket {
  const category = world.categories.find((c) => c.slug === m.category);
  const org = organizations.find((o) => o.id === m.org);
  return ticket({
    reference: m.reference,
    requester: {
      type: 'email',
      name: m.requesterName,
      email: m.email,
      phone: null,
      contactId: null,
      clientId: null,
    },
    subject: m.subject,
    description: m.description,
    channel: m.channel as Ticket['channel'],
    status: m.status as Ticket['status'],
    priority: m.priority as Ticket['priority'],
    category: category ? { id: category.id, name: category.name, slug: category.slug } : null,
    team: m.team === null ? null : { id: m.team, name: TEAMS[m.team] ?? '' },
    assignee: agentOf(m.assignee),
    ...(org ? { organization: org } : {}),
    tags: m.tags,
    customFields: m.custom as Ticket['customFields'],
  });
}

function fromTicket(t: Ticket): MTicket {
  return {
    reference: t.reference,
    requesterName: t.requester.name,
    subject: t.subject,
    description: t.description,
    email: t.requester.email,
    channel: t.channel,
    status: t.status,
    priority: t.priority,
    category: t.category?.slug ?? null,
    team: t.team?.id ?? null,
    assignee: t.assignee?.id ?? null,
    org: t.organization?.id ?? null,
    tags: t.tags,
    custom: t.customFields,
  };
}

function asModel(e: Evaluation): MResult {
  return {
    ticket: fromTicket(e.ticket),
    fired: e.fired.map((f) => f.id),
    stopped: e.stopped,
    skipped: e.skipped.map((s) => [s.id, s.reason]),
    messages: e.messages.map((m) => [m.ruleId ?? 0, m.type, m.body, m.agentId]),
    outcomes: e.outcomes.map((o) => [
      o.rule.id,
      o.fired ? 'fired' : o.reason === 'conditions' ? o.failed.path : o.reason,
    ]),
  };
}

describe('the evaluator against the model', () => {
  it(`agrees on ${RUNS} random rule sets and changes`, () => {
    const r = seededRandom(43);
    let fired = 0;
    let stopped = 0;
    const seen = new Set<string>();
    for (let run = 0; run < RUNS; run++) {
      const change = randomChange(r);
      const rules = randomRules(r, change);
      const saved = rules.map((m) =>
        rule(m as unknown as Record<string, unknown>, { id: m.id, position: m.position, active: m.active }),
      );
      const evaluation = evaluateRules({
        before: change.before && toTicket(change.before),
        after: toTicket(change.after),
        context: context({
          kind: change.kind,
          channel: change.channel,
          automatic: change.automatic,
          imported: change.imported,
          ruleRepliesLastHour: change.repliesLastHour,
          ...(change.message ? { message: change.message as never } : {}),
        }),
        rules: saved,
        directory,
      });
      const model = modelEvaluate(rules, change);
      expect(asModel(evaluation), `run ${run}: ${JSON.stringify({ rules, change })}`).toEqual(model);
      fired += model.fired.length;
      if (model.stopped) stopped++;
      for (const [, outcome] of model.outcomes) seen.add(outcome.replace(/\d+$/, 'N'));
      for (const [, reason] of model.skipped) seen.add(reason);
    }
    // The runs reach what they are meant to: many firings, and the cap at least once.
    expect(fired).toBeGreaterThan(RUNS);
    expect(stopped).toBeGreaterThan(0);
    expect([...seen].sort()).toEqual([
      'automatic_mail',
      'closed',
      'conditions.all.N',
      'conditions.any.N',
      'fired',
      'replies_per_hour',
      'skipped',
      'stopped',
    ]);
  });
});
