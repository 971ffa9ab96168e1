import { describe, expect, it } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { seededRandom } from '#test/support/random.ts';
import {
  type MAction,
  type MCondition,
  type MRule,
  type MTicket,
  modelEvaluate,
  type Value,
} from '#test/support/rule-model.ts';

/**
 * Rules in the change against the model written apart (test/support/rule-model.ts), through the API: random sets of
 * `updated` rules over status, priority, tags and team (set, add_tags, remove_tags), and random PATCHes of random
 * tickets. For each, `POST /api/rules/test` with the PATCH's body predicts the ticket the PATCH then commits, and
 * both are the model's (status, priority, tags in order, team).
 */
const gateway = useGateway();
const clock = useManualClock({ lazy: true });

const SEED = 4301;
const RULE_SETS = 8;
const TICKETS_PER_SET = 5;
const STATUSES = ['open', 'pending', 'in_progress', 'resolved'];
const PRIORITIES = ['low', 'medium', 'high', 'urgent'];
const TAGS = ['a', 'b', 'vip', 'late'];

type Random = ReturnType<typeof seededRandom>;

function condition(r: Random, teams: number[]): MCondition {
  const [field, values] = r.pick<[string, Value[]]>([
    ['status', STATUSES],
    ['priority', PRIORITIES],
    ['tags', TAGS],
    ['team_id', [...teams, null]],
  ]);
  const ops =
    field === 'tags'
      ? ['contains', 'not_contains', 'changed', 'changed_to', 'changed_from', 'present', 'absent']
      : ['is', 'is_not', 'in', 'not_in', 'changed', 'changed_to', 'changed_from'];
  const op = r.pick(ops);
  if (op === 'changed' || op === 'present' || op === 'absent') return { field, op };
  if (op === 'in' || op === 'not_in') return { field, op, value: [r.pick(values), r.pick(values)] };
  const one = r.pick(field === 'team_id' && op !== 'is' && op !== 'is_not' ? teams : values);
  return { field, op, value: one };
}

function action(r: Random, teams: number[]): MAction {
  return r.pick<() => MAction>([
    () => ({ type: 'set', field: 'status', value: r.pick(STATUSES) }),
    () => ({ type: 'set', field: 'priority', value: r.pick(PRIORITIES) }),
    () => ({ type: 'set', field: 'team_id', value: r.pick([...teams, null]) }),
    () => ({ type: 'add_tags', tags: [r.pick(TAGS)] }),
    () => ({ type: 'remove_tags', tags: [r.pick(TAGS)] }),
  ])();
}

/** A random ticket state, as a PATCH body (the ticket's own state before the change under test). */
function state(r: Random, teams: number[]) {
  return {
    status: r.pick(STATUSES),
    priority: r.pick(PRIORITIES),
    tags: TAGS.filter(() => r.chance(0.35)),
    team_id: r.pick([...teams, null]),
  };
}

/** A random change of one to three of the fields. */
function change(r: Random, teams: number[]): Record<string, unknown> {
  const all = state(r, teams);
  const keys = (Object.keys(all) as (keyof typeof all)[]).filter(() => r.chance(0.5));
  const chosen = keys.length > 0 ? keys : [r.pick(Object.keys(all) as (keyof typeof all)[])];
  return Object.fromEntries(chosen.map((k) => [k, all[k]]));
}

interface Shown {
  status: string;
  priority: string;
  tags: string[];
  team: { id: number } | null;
}

const fieldsOf = (t: Shown) => ({
  status: t.status,
  priority: t.priority,
  tags: t.tags,
  team: t.team?.id ?? null,
});

function asModel(t: Shown): MTicket {
  return {
    reference: 'TKT',
    requesterName: null,
    subject: 's',
    description: 'd',
    email: 'e@x.test',
    channel: 'api',
    status: t.status,
    priority: t.priority,
    category: null,
    team: t.team?.id ?? null,
    assignee: null,
    org: null,
    tags: t.tags,
    custom: {},
  };
}

describe('rules in the change against the model', () => {
  it(`${RULE_SETS * TICKETS_PER_SET} random PATCHes under random rule sets: rules/test, the PATCH and the model agree`, async () => {
    const account = await createTestAccount({ teams: [{ name: 'Billing' }, { name: 'Tech' }] });
    const call = keyedCaller(gateway, account.apiKey);
    const teams = ((await call('GET', '/api/teams')).body.data as { id: number }[]).map((t) => t.id);
    const r = seededRandom(SEED);
    let ruleIds: number[] = [];
    let fired = 0;
    for (let set = 0; set < RULE_SETS; set++) {
      for (const id of ruleIds) expect((await call('DELETE', `/api/rules/${id}`)).status).toBe(200);
      // The tickets first, in their random state, while no rule runs.
      const tickets: (Shown & { uuid: string })[] = [];
      for (let i = 0; i < TICKETS_PER_SET; i++) {
        const made = await call('POST', '/api/tickets', {
          subject: `Case ${set}.${i}`,
          description: 'd',
          requester_email: 'r@model.test',
        });
        expect(made.status, made.text).toBe(201);
        const shaped = await call('PATCH', `/api/tickets/${made.body.ticket.uuid}`, state(r, teams));
        expect(shaped.status, shaped.text).toBe(200);
        tickets.push(shaped.body.ticket);
      }
      const rules: MRule[] = [];
      for (let i = 0, n = 2 + r.int(4); i < n; i++) {
        const body = {
          on: 'updated',
          conditions: {
            all: Array.from({ length: 1 + r.int(2) }, () => condition(r, teams)),
            any: Array.from({ length: r.chance(0.3) ? 1 + r.int(2) : 0 }, () => condition(r, teams)),
          },
          actions: Array.from({ length: 1 + r.int(2) }, () => action(r, teams)),
        };
        const made = await call('POST', '/api/rules', { name: `set ${set} rule ${i}`, ...body });
        expect(made.status, `${made.text}\n${JSON.stringify(body)}`).toBe(201);
        rules.push({ id: made.body.data.id, position: i, active: true, ...body });
      }
      ruleIds = rules.map((rule) => rule.id);
      for (const [i, before] of tickets.entries()) {
        const patch = change(r, teams);
        const label = `seed ${SEED}, set ${set}, ticket ${i}: ${JSON.stringify(rules)}\nbefore ${JSON.stringify(fieldsOf(before))}\npatch ${JSON.stringify(patch)}`;
        const b = asModel(before);
        const a: MTicket = {
          ...b,
          ...('status' in patch ? { status: patch.status as string } : {}),
          ...('priority' in patch ? { priority: patch.priority as string } : {}),
          ...('tags' in patch ? { tags: patch.tags as string[] } : {}),
          ...('team_id' in patch ? { team: patch.team_id as number | null } : {}),
        };
        const same =
          JSON.stringify(fieldsOf(before)) ===
          JSON.stringify(fieldsOf({ ...a, team: a.team === null ? null : { id: a.team } }));
        // A PATCH that changes nothing runs no rule (docs/rules.md, "Where the contract is silent").
        const model = same
          ? b
          : modelEvaluate(rules, {
              kind: 'update',
              before: b,
              after: a,
              channel: 'api',
              automatic: false,
              imported: false,
              repliesLastHour: 0,
            }).ticket;
        const expected = {
          status: model.status,
          priority: model.priority,
          tags: model.tags,
          team: model.team,
        };
        const tested = await call('POST', '/api/rules/test', { ticket: before.uuid, change: patch });
        expect(tested.status, tested.text).toBe(200);
        const patched = await call('PATCH', `/api/tickets/${before.uuid}`, patch);
        expect(patched.status, patched.text).toBe(200);
        expect(fieldsOf(tested.body.data.ticket), `rules/test, ${label}`).toEqual(expected);
        expect(fieldsOf(patched.body.ticket), `PATCH, ${label}`).toEqual(expected);
        const got = await call('GET', `/api/tickets/${before.uuid}`);
        expect(fieldsOf(got.body.data), `GET, ${label}`).toEqual(expected);
        if (JSON.stringify(expected) !== JSON.stringify(fieldsOf(before))) fired++;
      }
    }
    // The rule sets and changes did something: not a run where every rule stayed silent.
    expect(fired).toBeGreaterThan(RULE_SETS * TICKETS_PER_SET * 0.5);
  }, 120_000);
});

describe('rules in the change: loops and changes that change nothing', () => {
  async function withRules(bodies: Record<string, unknown>[]) {
    const account = await createTestAccount();
    const call = keyedCaller(gateway, account.apiKey);
    const ids: number[] = [];
    for (const body of bodies) {
      const made = await call('POST', '/api/rules', { name: 'rule', on: 'updated', ...body });
      expect(made.status, made.text).toBe(201);
      ids.push(made.body.data.id);
    }
    const made = await call('POST', '/api/tickets', {
      subject: 'Loop',
      description: 'd',
      requester_email: 'r@loop.test',
    });
    expect(made.status, made.text).toBe(201);
    return { account, call, ids, uuid: made.body.ticket.uuid as string };
  }

  it('two rules that would loop: one commit, one version step, each fires once, as rules/test and the model say', async () => {
    const loop = [
      {
        conditions: { all: [{ field: 'status', op: 'is', value: 'open' }] },
        actions: [{ type: 'set', field: 'status', value: 'pending' }],
      },
      {
        conditions: { all: [{ field: 'status', op: 'is', value: 'pending' }] },
        actions: [{ type: 'set', field: 'status', value: 'open' }],
      },
    ];
    const { account, call, ids, uuid } = await withRules(loop);
    const tested = await call('POST', '/api/rules/test', { ticket: uuid, change: { priority: 'high' } });
    expect(tested.body.data.fired.map((f: { id: number }) => f.id)).toEqual(ids);
    const { result: patched, operations } = await withFault(undefined, () =>
      call('PATCH', `/api/tickets/${uuid}`, { priority: 'high' }),
    );
    expect(patched.status, patched.text).toBe(200);
    // One transaction: the change and both firings, no write after it.
    expect(operations.filter((o) => o === 'TransactWriteItems')).toHaveLength(1);
    expect(operations.at(-1)).toBe('TransactWriteItems');
    expect(patched.headers.get('etag')).toBe('"2"');
    const modelled = modelEvaluate(
      loop.map(
        (rule, i): MRule => ({
          id: ids[i] as number,
          position: i,
          active: true,
          on: 'updated',
          conditions: { all: rule.conditions.all, any: [] },
          actions: rule.actions,
        }),
      ),
      {
        kind: 'update',
        before: asModel({ status: 'open', priority: 'medium', tags: [], team: null }),
        after: asModel({ status: 'open', priority: 'high', tags: [], team: null }),
        channel: 'api',
        automatic: false,
        imported: false,
        repliesLastHour: 0,
      },
    );
    expect(modelled.fired).toEqual(ids);
    const expected = { status: modelled.ticket.status, priority: 'high', tags: [], team: null };
    expect(fieldsOf(patched.body.ticket)).toEqual(expected);
    expect(fieldsOf(tested.body.data.ticket)).toEqual(expected);
    // Nothing runs on afterwards: a minute later the ticket is still at version 2, with one ticket.updated.
    await clock().advance(60_000);
    const got = await call('GET', `/api/tickets/${uuid}`);
    expect(got.headers.get('etag')).toBe('"2"');
    const feed = await readFeedToEnd(gateway.call, account.apiKey, { types: ['ticket.updated'] });
    expect(feed.events.map((e) => [e.data.version, (e.data as Record<string, unknown>).rules])).toEqual([
      [2, ids.map((id) => ({ id, version: 1 }))],
    ]);
    const listed = (await call('GET', '/api/rules')).body.data as { fired: { last_hour: number } }[];
    expect(listed.map((r) => r.fired.last_hour)).toEqual([1, 1]);
  });

  it('a PATCH that changes nothing runs no rule, and its rules/test says so', async () => {
    const { call, uuid } = await withRules([
      {
        conditions: { all: [{ field: 'status', op: 'is', value: 'open' }] },
        actions: [{ type: 'add_tags', tags: ['touched'] }],
      },
    ]);
    const same = { priority: 'medium' };
    const tested = await call('POST', '/api/rules/test', { ticket: uuid, change: same });
    expect(tested.status, tested.text).toBe(200);
    expect(tested.body.data.fired).toEqual([]);
    expect(tested.body.data.ticket.tags).toEqual([]);
    const patched = await call('PATCH', `/api/tickets/${uuid}`, same);
    expect(patched.body.ticket.tags).toEqual([]);
    expect(patched.headers.get('etag')).toBe('"1"');
  });
});
