import { describe, expect, it } from 'vitest';
import { breachPass } from '#lib/tickets/breaches.ts';
import { formatTimestamp, nowMicros, parseTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { atTime } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Messages drive the service-level clocks end to end (decisions.md, "Conversations" and "Reply-based service
 * levels"): what POST /api/tickets/{t}/messages commits is what the clocks, `sla=breached`, `sort=due` and the
 * breach runner read, over HTTP, with no stored field set by hand.
 */
const gateway = useGateway();
const MIN_US = 60_000_000;
const POLICY = {
  agents: agentsFile(1),
  sla_policies: [
    { name: 'Standard', first_reply_minutes: 1, next_reply_minutes: 2, resolution_minutes: 60 },
    { name: 'Low', priority: 'low', first_reply_minutes: 600, resolution_minutes: 6_000 },
  ],
};

type Clock = { due_at: string; completed_at: string | null; breached_at: string | null };
type Shown = {
  uuid: string;
  created_at: string;
  waiting_since: string | null;
  sla: {
    policy: string | null;
    first_reply: Clock | null;
    next_reply: Clock | null;
    resolution: Clock | null;
  };
};

const plusUs = (iso: string, us: number) => formatTimestamp(parseTimestamp(iso) + us);

/** The runner's pass over the file's table (test/support/file-table.ts): this file's accounts only. */
const pass = () => breachPass({ limit: 100_000 });

const account = (): Promise<TestAccount> => createTestAccount(POLICY);

async function createAt(a: TestAccount, atUs: number): Promise<Shown> {
  const r = await atTime(atUs / 1000, () =>
    gateway.call('POST', '/api/tickets', {
      key: a.apiKey,
      body: { subject: 'Help', description: 'd', requester_email: 'r@example.com' },
    }),
  );
  expect(r.status, r.text).toBe(201);
  return r.body.ticket;
}

/** A message posted with the service's clock at `atUs` (its created_at, and what its commit decides at). */
function postAt(a: TestAccount, uuid: string, atUs: number, body: Record<string, unknown>) {
  return atTime(atUs / 1000, () => post(a, uuid, body));
}

const breachesOf = async (a: TestAccount) =>
  (await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.sla_breached'] })).events.map(({ data }) => {
    const { object, metric, due_at } = data as typeof data & { metric: string; due_at: string };
    return [object.uuid, metric, due_at];
  });

async function post(a: TestAccount, uuid: string, body: Record<string, unknown>) {
  const r = await gateway.call('POST', `/api/tickets/${uuid}/messages`, { key: a.apiKey, body });
  expect(r.status, r.text).toBe(201);
  return r.body as { data: { created_at: string }; ticket: Shown };
}

describe('messages and the service-level clocks', () => {
  it('a reply completes the first-reply clock, a requester message starts a next-reply cycle, a note changes none', async () => {
    const a = await account();
    const agent = (a.agents[0] as { id: number }).id;
    const ticket = await createAt(a, nowMicros());
    expect(ticket.sla.first_reply?.due_at).toBe(plusUs(ticket.created_at, MIN_US));
    expect(ticket.sla.next_reply).toBeNull();

    const reply = await post(a, ticket.uuid, { body: 'On it.', agent_id: agent });
    expect(reply.ticket.sla.first_reply).toEqual({
      due_at: ticket.sla.first_reply?.due_at,
      completed_at: reply.data.created_at,
      breached_at: null,
    });
    expect(reply.ticket.waiting_since).toBeNull();

    const asked = await post(a, ticket.uuid, { body: 'Any news?', author: 'requester' });
    expect(asked.ticket.waiting_since).toBe(asked.data.created_at);
    expect(asked.ticket.sla.next_reply).toEqual({
      due_at: plusUs(asked.data.created_at, 2 * MIN_US),
      completed_at: null,
      breached_at: null,
    });

    const note = await post(a, ticket.uuid, {
      body: 'Ask the vendor',
      visibility: 'internal',
      agent_id: agent,
    });
    expect(note.ticket.sla).toEqual(asked.ticket.sla);

    // The message's ticket.updated says what the clocks did, in the same commit as message.created.
    const feed = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.updated'] });
    const previous = feed.events.map((e) => Object.keys(e.data.previous ?? {}));
    expect(previous[0]).toContain('sla');
  });

  it('a late first reply shows its breach at the due time, and the runner writes it once; sort=due follows', async () => {
    const a = await account();
    const agent = (a.agents[0] as { id: number }).id;
    const late = await createAt(a, nowMicros() - 10 * MIN_US);
    const fresh = await createAt(a, nowMicros());
    // Soonest uncompleted due time first: the late ticket's first reply is overdue.
    const sorted = await gateway.call('GET', '/api/tickets?sort=due', { key: a.apiKey });
    expect(sorted.body.data.map((t: Shown) => t.uuid)).toEqual([late.uuid, fresh.uuid]);

    const reply = await post(a, late.uuid, { body: 'Sorry for the wait.', agent_id: agent });
    const clock = reply.ticket.sla.first_reply as Clock;
    expect(clock.completed_at).toBe(reply.data.created_at);
    expect(clock.breached_at).toBe(clock.due_at);

    await pass();
    await pass();
    const breaches = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.sla_breached'] });
    expect(
      breaches.events.map(({ data }) => {
        const { object, metric, due_at } = data as typeof data & { metric: string; due_at: string };
        return [object.uuid, metric, due_at];
      }),
    ).toEqual([[late.uuid, 'first_reply', clock.due_at]]);
    // The late ticket's clocks now run only toward resolution (60 min from creation, 50 from now): the fresh
    // ticket's first reply (1 min) is sooner.
    const after = await gateway.call('GET', '/api/tickets?sort=due', { key: a.apiKey });
    expect(after.body.data.map((t: Shown) => t.uuid)).toEqual([fresh.uuid, late.uuid]);
    // Completed, so not in sla=breached (a breached clock not yet completed).
    const breached = await gateway.call('GET', '/api/tickets?sla=breached', { key: a.apiKey });
    expect(breached.body.meta.total).toBe(0);
  });

  it('a runner stalled across two next-reply cycles: each cycle breaches once, the older one written by the message that ends it', async () => {
    const a = await account();
    const agent = (a.agents[0] as { id: number }).id;
    const t0 = nowMicros() - 30 * MIN_US;
    const ticket = await createAt(a, t0);
    await postAt(a, ticket.uuid, t0 + MIN_US / 2, { body: 'On it.', agent_id: agent });
    // Cycle 1 from t0 + 1 min, due at + 3 min; no runner passes (stalled): it is answered late, at + 5 min, and
    // the requester's next message starts cycle 2 at + 6 min, due at + 8 min, which passes too.
    const first = await postAt(a, ticket.uuid, t0 + MIN_US, { body: 'Any news?', author: 'requester' });
    const firstDue = first.ticket.sla.next_reply?.due_at as string;
    const late = await postAt(a, ticket.uuid, t0 + 5 * MIN_US, { body: 'Sorry.', agent_id: agent });
    expect(late.ticket.sla.next_reply?.breached_at).toBe(firstDue);
    const second = await postAt(a, ticket.uuid, t0 + 6 * MIN_US, {
      body: 'Still broken.',
      author: 'requester',
    });
    const secondDue = second.ticket.sla.next_reply?.due_at as string;
    expect(secondDue).toBe(plusUs(second.data.created_at, 2 * MIN_US));
    // The message that ended cycle 1's watch wrote its breach in its own commit (the runner had not yet).
    expect(await breachesOf(a)).toEqual([[ticket.uuid, 'next_reply', firstDue]]);

    // The runner comes back: cycle 2's breach, once; nothing for cycle 1 again.
    await pass();
    await pass();
    expect(await breachesOf(a)).toEqual([
      [ticket.uuid, 'next_reply', firstDue],
      [ticket.uuid, 'next_reply', secondDue],
    ]);
    const breached = await gateway.call('GET', '/api/tickets?sla=breached', { key: a.apiKey });
    expect(breached.body.data.map((t: Shown) => t.uuid)).toEqual([ticket.uuid]);
  });

  it('the runner and the message that replaces a late cycle, racing: its breach is written once either way', async () => {
    const a = await account();
    const agent = (a.agents[0] as { id: number }).id;
    const dues: string[] = [];
    const uuids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const t0 = nowMicros() - 10 * MIN_US;
      const ticket = await createAt(a, t0);
      await postAt(a, ticket.uuid, t0 + MIN_US / 2, { body: 'On it.', agent_id: agent });
      const asked = await postAt(a, ticket.uuid, t0 + MIN_US, { body: 'News?', author: 'requester' });
      await postAt(a, ticket.uuid, t0 + 5 * MIN_US, { body: 'Late.', agent_id: agent });
      uuids.push(ticket.uuid);
      dues.push(asked.ticket.sla.next_reply?.due_at as string);
    }
    // Each late cycle's breach is owed; the runner and the requester's next message (a new cycle, due in 2
    // minutes) race for it: whichever commits first writes it, the other reads it written.
    await Promise.all([
      pass(),
      ...uuids.map((uuid) => post(a, uuid, { body: 'Again.', author: 'requester' })),
      pass(),
    ]);
    await pass();
    const written = (await breachesOf(a)).map(([uuid, metric, due]) => `${uuid} ${metric} ${due}`).sort();
    expect(written).toEqual(uuids.map((uuid, i) => `${uuid} next_reply ${dues[i]}`).sort());
  });

  it('a priority change after a first reply in time leaves that completed clock as it was; the running ones move', async () => {
    const a = await createTestAccount({
      agents: agentsFile(1),
      sla_policies: [
        { name: 'Standard', first_reply_minutes: 30, next_reply_minutes: 60, resolution_minutes: 600 },
        {
          name: 'Urgent',
          priority: 'urgent',
          first_reply_minutes: 5,
          next_reply_minutes: 10,
          resolution_minutes: 60,
        },
      ],
    });
    const agent = (a.agents[0] as { id: number }).id;
    const t0 = nowMicros() - 14 * MIN_US;
    const ticket = await createAt(a, t0);
    const created = ticket.created_at;
    const reply = await postAt(a, ticket.uuid, t0 + 10 * MIN_US, { body: 'On it.', agent_id: agent });
    const asked = await postAt(a, ticket.uuid, t0 + 12 * MIN_US, { body: 'News?', author: 'requester' });
    const firstReply = {
      due_at: plusUs(created, 30 * MIN_US),
      completed_at: reply.data.created_at,
      breached_at: null,
    };
    expect(asked.ticket.sla.first_reply).toEqual(firstReply);

    const patched = await atTime((t0 + 13 * MIN_US) / 1000, () =>
      gateway.call('PATCH', `/api/tickets/${ticket.uuid}`, { key: a.apiKey, body: { priority: 'urgent' } }),
    );
    expect(patched.status, patched.text).toBe(200);
    const expected = {
      policy: 'Urgent',
      // Answered in time under the policy it was answered under: history, whatever the new policy's target.
      first_reply: firstReply,
      next_reply: {
        due_at: plusUs(asked.data.created_at, 10 * MIN_US),
        completed_at: null,
        breached_at: null,
      },
      resolution: { due_at: plusUs(created, 60 * MIN_US), completed_at: null, breached_at: null },
    };
    expect(patched.body.ticket.sla).toEqual(expected);
    const read = await gateway.call('GET', `/api/tickets/${ticket.uuid}`, { key: a.apiKey });
    expect(read.body.data.sla).toEqual(expected);
    // The runner finds no breach to write: the first reply was in time.
    await pass();
    expect(await breachesOf(a)).toEqual([]);
  });

  it('a priority change that moves a passed, unwritten due time into the future writes that breach in its commit', async () => {
    const a = await account();
    const ticket = await createAt(a, nowMicros() - 10 * MIN_US);
    const due = ticket.sla.first_reply?.due_at as string;
    // The runner stalled past the first reply's due time; the change to `low` (600 minutes) moves it away.
    const patched = await gateway.call('PATCH', `/api/tickets/${ticket.uuid}`, {
      key: a.apiKey,
      body: { priority: 'low' },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.ticket.sla.first_reply.breached_at).toBeNull();
    expect(await breachesOf(a)).toEqual([[ticket.uuid, 'first_reply', due]]);
    await pass();
    expect(await breachesOf(a)).toEqual([[ticket.uuid, 'first_reply', due]]);
  });
});
