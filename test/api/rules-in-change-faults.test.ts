import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { type Answer, keyedCaller, useGateway } from '#test/support/http.ts';

/**
 * A change with rules under faults (issue 43, "Faults and bad input"; docs/rules.md, "In the change's transaction"):
 * each store call of a PATCH whose two rules set a field, add a tag, write a note and a reply fails in turn (before
 * reaching the store, after it did its work, or refused as a transaction conflict), and so does each of a message
 * post whose `message` rule tags the ticket and replies. After the fault the ticket, its messages, its events and the
 * rules' `fired` counts are all of the change or none of it; the client's retry with the same Idempotency-Key then
 * lands it exactly once.
 */
const gateway = useGateway();
const clock = useManualClock({ lazy: true });
const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
const READS = ['GetItem', 'Query', 'BatchGetItem'];
/**
 * Past the Idempotency-Key's lease (a claim whose request failed after putting it) and the feed's settle window (a
 * place taken by a request that never knew it): the function timeout, 10 s. A faulted request's leftovers are
 * then what the contract says they become, not what a wait would hide.
 */
const PAST_LEASES_MS = 11_000;

async function setUp() {
  const account = await createTestAccount({
    agents: agentsFile(2),
    teams: [{ name: 'Billing' }],
    email: { addresses: [`support-${randomUUID().slice(0, 8)}@rules.example`] },
  });
  const call = keyedCaller(gateway, account.apiKey);
  const team = ((await call('GET', '/api/teams')).body.data[0] as { id: number }).id;
  const agent = (account.agents[0] as { id: number }).id;
  const rule = async (body: Record<string, unknown>) => {
    const r = await call('POST', '/api/rules', { name: 'rule', ...body });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as number;
  };
  const ids = [
    await rule({
      on: 'updated',
      conditions: { all: [{ field: 'priority', op: 'changed_to', value: 'urgent' }] },
      actions: [
        { type: 'add_tags', tags: ['escalated'] },
        { type: 'set', field: 'team_id', value: team },
        { type: 'note', body: 'Escalated {{ticket.reference}}', agent_id: agent },
      ],
    }),
    await rule({
      on: 'updated',
      conditions: { all: [{ field: 'tags', op: 'contains', value: 'escalated' }] },
      actions: [{ type: 'reply', body: 'We are on it ({{ticket.status}}).', agent_id: agent }],
    }),
    await rule({
      on: 'message',
      conditions: {
        all: [
          { field: 'message.author', op: 'is', value: 'requester' },
          { field: 'message.body', op: 'contains', value: 'refund' },
        ],
      },
      actions: [
        { type: 'add_tags', tags: ['refund'] },
        { type: 'reply', body: 'We got your refund request.', agent_id: agent },
      ],
    }),
  ];
  return { account, call, team, agent, ids };
}

type SetUp = Awaited<ReturnType<typeof setUp>>;

/** What a ticket's change left: its version, fields, messages, events, and the `fired` of the rules it may fire. */
async function snapshot(s: SetUp, uuid: string, ruleIds: number[], from: Cursor) {
  const [got, messages, feed, rules] = await Promise.all([
    s.call('GET', `/api/tickets/${uuid}`),
    s.call('GET', `/api/tickets/${uuid}/messages`),
    readFeedToEnd(gateway.call, s.account.apiKey, {
      after: from.after,
      types: ['ticket.updated', 'message.created'],
    }),
    s.call('GET', '/api/rules?limit=100'),
  ]);
  expect(got.status, got.text).toBe(200);
  from.next = feed.after;
  const t = got.body.data;
  return {
    version: got.headers.get('etag'),
    priority: t.priority,
    status: t.status,
    tags: t.tags,
    team: t.team?.id ?? null,
    messages: (messages.body.data as { visibility: string; body: string }[]).map(
      (m) => `${m.visibility} ${m.body}`,
    ),
    events: feed.events
      .filter((e) => (e.data.object.uuid ?? e.data.object.ticket_uuid) === uuid)
      .map((e) => (e.type === 'message.created' ? `${e.type} ${e.data.object.body}` : e.type)),
    fired: ruleIds.map((id) => {
      const rule = (rules.body.data as { id: number; fired: { last_hour: number } }[]).find(
        (r) => r.id === id,
      );
      if (!rule) throw new Error(`rule ${id} is not listed`);
      return rule.fired.last_hour;
    }),
  };
}

/** Where a snapshot reads the feed from (the events of the tickets before are behind it), and where it ended. */
interface Cursor {
  after: string | undefined;
  next?: string | undefined;
}

type Snapshot = Awaited<ReturnType<typeof snapshot>>;

interface Scenario {
  /** The rules the change fires. */
  rules: (s: SetUp) => number[];
  send: (s: SetUp, uuid: string, key: string) => Promise<Answer>;
  ok: number;
  /** The change with every effect of its rules, from the ticket before it and the rules' counts before it. */
  landed: (s: SetUp, none: Snapshot, reference: string) => Snapshot;
}

const SCENARIOS: [string, Scenario][] = [
  [
    'a PATCH whose two rules set the team, tag, note and reply',
    {
      rules: (s) => s.ids.slice(0, 2),
      send: (s, uuid, key) =>
        s.call('PATCH', `/api/tickets/${uuid}`, { priority: 'urgent' }, { 'Idempotency-Key': key }),
      ok: 200,
      landed: (s, none, reference) => ({
        ...none,
        version: '"2"',
        priority: 'urgent',
        tags: ['escalated'],
        team: s.team,
        messages: [...none.messages, `internal Escalated ${reference}`, 'public We are on it (open).'],
        events: [
          'ticket.updated',
          `message.created Escalated ${reference}`,
          'message.created We are on it (open).',
        ],
        fired: none.fired.map((n) => n + 1),
      }),
    },
  ],
  [
    'a message whose rule tags the ticket and replies',
    {
      rules: (s) => s.ids.slice(2),
      send: (s, uuid, key) =>
        s.call(
          'POST',
          `/api/tickets/${uuid}/messages`,
          { body: 'I want a refund please', author: 'requester' },
          { 'Idempotency-Key': key },
        ),
      ok: 201,
      landed: (_s, none) => ({
        ...none,
        version: '"2"',
        tags: ['refund'],
        messages: [...none.messages, 'public I want a refund please', 'public We got your refund request.'],
        events: [
          'message.created I want a refund please',
          'ticket.updated',
          'message.created We got your refund request.',
        ],
        fired: none.fired.map((n) => n + 1),
      }),
    },
  ],
];

describe('a change with rules survives a failure of any of its store calls', () => {
  it.each(SCENARIOS)(
    '%s: after the fault all of it or none; the keyed retry lands it once',
    async (_label, scenario) => {
      const time = clock();
      const s = await setUp();
      const ticket = async () => {
        const r = await s.call('POST', '/api/tickets', {
          subject: 'Where is my invoice',
          description: 'Please send it again.',
          requester_email: 'ada@customer.example',
        });
        expect(r.status, r.text).toBe(201);
        return r.body.ticket as { uuid: string; reference: string };
      };
      const ruleIds = scenario.rules(s);
      // The dry run: the calls of one change (the account's settings and rules cached by the ones before it).
      const warm = await ticket();
      expect((await scenario.send(s, warm.uuid, 'warm')).status).toBe(scenario.ok);
      const probe = await ticket();
      const dry = await withFault(undefined, () => scenario.send(s, probe.uuid, 'dry'));
      expect(dry.result.status, dry.result.text).toBe(scenario.ok);
      expect(dry.operations.at(-1)).toBe('TransactWriteItems');
      // Every call lost on its way; a write also done with its answer lost; from the key's claim on, a write also
      // refused as a transaction conflict (the rate count's item is in no transaction: DynamoDB never refuses it so).
      const claim = dry.operations.indexOf('PutItem');
      const positions = dry.operations.flatMap((operation, i) =>
        MODES.filter(
          (mode) =>
            mode === 'lost-request' || (!READS.includes(operation) && (mode === 'lost-answer' || i >= claim)),
        ).map((mode) => ({ mode, at: i + 1, operation })),
      );
      const seen: string[] = [];
      // A fresh ticket before the change, and the rules' counts so far (read once, then known).
      const first = await ticket();
      await time.advance(1);
      const cursor: Cursor = { after: undefined };
      const fresh = await snapshot(s, first.uuid, ruleIds, cursor);
      cursor.after = cursor.next;
      let fired = fresh.fired;
      for (const { mode, at, operation } of positions) {
        const position = `${mode} at ${at} (${operation})`;
        const made = await ticket();
        const none = { ...fresh, fired };
        const all = scenario.landed(s, none, made.reference);
        const key = `k-${mode}-${at}`;
        const faulted = await withFault({ at, mode }, () => scenario.send(s, made.uuid, key));

        expect([scenario.ok, 409, 503], `${position}: ${faulted.result.text}`).toContain(
          faulted.result.status,
        );
        await time.advance(PAST_LEASES_MS);
        const after = await snapshot(s, made.uuid, ruleIds, cursor);
        if (faulted.result.status === scenario.ok) expect(after, position).toEqual(all);
        else expect([none, all], position).toContainEqual(after);
        seen.push(
          `${position}: ${faulted.result.status} ${JSON.stringify(after) === JSON.stringify(all) ? 'all' : 'none'}`,
        );
        const retry = await scenario.send(s, made.uuid, key);
        expect(retry.status, `${position} retry: ${retry.text}`).toBe(scenario.ok);
        if (faulted.result.status === scenario.ok) expect(retry.text, position).toBe(faulted.result.text);
        // On past the firings (a message's, and so its rules', is stamped a microsecond after the ticket's last).
        await time.advance(PAST_LEASES_MS);
        expect(await snapshot(s, made.uuid, ruleIds, cursor), `${position} after the retry`).toEqual(all);
        cursor.after = cursor.next;
        fired = all.fired;
      }
      // The commit done and its answer lost: the change is there whole before the retry, which adds nothing.
      const commit = dry.operations.length;
      expect(seen).toContain(`lost-answer at ${commit} (TransactWriteItems): 503 all`);
      expect(seen).toContain(`lost-request at ${commit} (TransactWriteItems): 503 none`);
    },
    180_000,
  );
});
