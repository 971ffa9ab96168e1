import { afterEach, describe, expect, it } from 'vitest';
import { breachPass } from '#lib/tickets/breaches.ts';
import { formatTimestamp, nowMicros, parseTimestamp, setClockForTests } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
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
  sla_policies: [{ name: 'Standard', first_reply_minutes: 1, next_reply_minutes: 2, resolution_minutes: 60 }],
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

/** The account's runner pass, for this file's accounts only (the table is shared by the test files). */
const ours = new Set<string>();
const pass = () => breachPass({ accepts: (id) => ours.has(id), limit: 100_000 });

async function account(): Promise<TestAccount> {
  const a = await createTestAccount(POLICY);
  ours.add(a.accountId);
  return a;
}

async function createAt(a: TestAccount, atUs: number): Promise<Shown> {
  setClockForTests(() => atUs);
  try {
    const r = await gateway.call('POST', '/api/tickets', {
      key: a.apiKey,
      body: { subject: 'Help', description: 'd', requester_email: 'r@example.com' },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.ticket;
  } finally {
    setClockForTests();
  }
}

async function post(a: TestAccount, uuid: string, body: Record<string, unknown>) {
  const r = await gateway.call('POST', `/api/tickets/${uuid}/messages`, { key: a.apiKey, body });
  expect(r.status, r.text).toBe(201);
  return r.body as { data: { created_at: string }; ticket: Shown };
}

describe('messages and the service-level clocks', () => {
  afterEach(() => setClockForTests());

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
});
