import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadAccountConfig, putAccount, putConfigEntities } from '#lib/data/accounts/accounts.ts';
import { moveConfigVersion } from '#lib/data/accounts/config-version.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { withRetries } from '#test/support/retries.ts';
import { assigneeCounts as tally, ticketBody } from '#test/support/tickets.ts';

/**
 * Automatic assignment under racing creates (decisions.md, "Automatic assignment"), sent as the contract's client
 * sends them: each create with an Idempotency-Key, a 503 sent again with it (test/support/retries.ts). Twenty to
 * forty creates at once queue on one DynamoDB Local; on a machine loaded by a second test run some passed the
 * request's 8.5 s deadline and answered 503 (a run beside another: both least-busy races, in the api tier then),
 * which a client sends again and the key lands once. So they run here, where a client's pacing is real time.
 */
const gateway = useGateway();

interface Ticket {
  assignee: { id: number } | null;
}

/** `n` creates at once for `key`, each landed once (201), retried with its key on a 503. */
async function racingCreates(key: string, n: number): Promise<Ticket[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const headers = { 'Idempotency-Key': randomUUID() };
      const answer = await withRetries(() =>
        gateway.call('POST', '/api/tickets', { key, body: ticketBody(), headers }),
      );
      expect(answer.status, answer.text).toBe(201);
      return (answer.body as { ticket: Ticket }).ticket;
    }),
  );
}

describe('automatic assignment under racing creates', () => {
  it('round-robin stays fair under concurrency: 30 creates over 3 agents give 10 each', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'round_robin' },
      agents: agentsFile(3),
    });
    const tickets = await racingCreates(account.apiKey, 30);
    expect(Object.values(tally(tickets))).toEqual([10, 10, 10]);
  });

  it('least-busy: 20 concurrent creates over 4 idle agents give each 5 (±1)', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: agentsFile(4),
    });
    const tickets = await racingCreates(account.apiKey, 20);
    const counts = Object.values(tally(tickets));
    expect(counts).toHaveLength(4);
    for (const c of counts) expect(Math.abs(c - 5)).toBeLessThanOrEqual(1);
  });

  it('least-busy over 1,000 active agents: 40 concurrent creates all land, each on a distinct idle agent', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: agentsFile(1000),
    });
    const tickets = await racingCreates(account.apiKey, 40);
    const counts = Object.values(tally(tickets));
    expect(counts).toHaveLength(40);
    expect(counts.every((c) => c === 1)).toBe(true);
    // Both halves of the rule: the first pick is the lowest id (ties go there, and one of the racers lands on
    // it); those that lost it picked again at random among the tied, so they spread over ids far past the 40
    // lowest instead of queueing on the next lowest one.
    const ids = account.agents.map((a) => a.id).sort((a, b) => a - b);
    const assigned = tickets.map((t) => t.assignee?.id as number);
    expect(assigned).toContain(ids[0]);
    expect(assigned.filter((id) => id > (ids[39] as number)).length).toBeGreaterThan(0);
    // Once they are all busy with one, the next create goes back to the lowest idle id.
    const busy = new Set(tickets.map((t) => t.assignee?.id));
    const idle = account.agents.map((a) => a.id).filter((id) => !busy.has(id));
    expect((await racingCreates(account.apiKey, 1))[0]?.assignee?.id).toBe(Math.min(...idle));
  });

  /**
   * Capacity (docs/decisions.md, "Availability and capacity in assignment"): every agent of 1,000 may take one
   * ticket, so each of 40 racing creates must land on an agent of its own, whatever the method: random's collisions
   * and least-busy's shared first pick are refused by the condition on the agent's cell and picked again. The three
   * methods race in turn on one account (a 1,000-agent account is 4 s to apply): each race's 40 must also miss the
   * agents the earlier races filled, 120 distinct agents in all.
   */
  it('over 1,000 agents of capacity 1: 40 concurrent creates land on 40 distinct agents, for each method', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'round_robin' },
      agents: agentsFile(1000),
    });
    // The capacities written behind the API (1,000 PATCHes would be the test's whole time), the version moved.
    const config = await loadAccountConfig(account.accountId);
    if (!config) throw new Error('no account');
    const agents = config.agents.map((value) => ({
      type: 'agent' as const,
      value: { ...value, capacity: 1 },
    }));
    await putConfigEntities(account.accountId, agents);
    await moveConfigVersion(account.accountId);
    const first = await gateway.call('GET', `/api/agents/${account.agents[0]?.id}`, { key: account.apiKey });
    expect(first.body.data.capacity).toBe(1);

    const full = new Set<number>();
    for (const method of ['round_robin', 'random', 'least_busy'] as const) {
      await putAccount({ ...config.account, autoAssignment: { enabled: true, method } });
      await moveConfigVersion(account.accountId);
      const tickets = await racingCreates(account.apiKey, 40);
      const assigned = tickets.map((t) => t.assignee?.id as number);
      expect(assigned.every(Number.isInteger), method).toBe(true);
      expect(new Set(assigned).size, method).toBe(40);
      expect(
        assigned.filter((id) => full.has(id)),
        method,
      ).toEqual([]);
      for (const id of assigned) full.add(id);
    }
  });
});
