import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import { ASSIGNMENT_METHODS } from '#lib/accounts/types.ts';
import {
  AGENTLESS_HEADS,
  agentlessWindow,
  candidatesFor,
  needsOpenWork,
  pickAssignee,
  pickCondition,
  queuesFor,
} from '#lib/tickets/assignment.ts';
import { formatTimestamp } from '#lib/time.ts';

/**
 * The pick of automatic assignment (decisions.md, "People: agents, teams and organizations") against random agent
 * states: it is always an agent that qualifies, and none only when none does. What qualifies is written here from
 * the contract's words, apart from lib/tickets/assignment.ts: active; available, or away or offline with a
 * `status_until` passed; below a capacity (null: no limit); of the ticket's team when that team has an active agent.
 */
const NOW_US = Date.UTC(2026, 11, 5, 12) * 1000;

const agentState = fc.record({
  active: fc.boolean(),
  teamIds: fc.subarray([1, 2]),
  status: fc.constantFrom(undefined, 'available', 'away', 'offline'),
  /** Minutes from now that the status ends (null: until changed). */
  untilMinutes: fc.option(fc.integer({ min: -30, max: 30 }), { nil: null }),
  capacity: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
  busy: fc.nat(4),
});

const scenario = fc.record({
  agents: fc.array(agentState, { maxLength: 8 }),
  teamId: fc.constantFrom(null, 1, 2, 3),
  method: fc.constantFrom(...ASSIGNMENT_METHODS),
  cursor: fc.integer({ min: 1, max: 50 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

function build(s: Scenario) {
  const agents: Agent[] = s.agents.map((a, i) => ({
    id: 10 + i,
    email: `a${i}@desk.test`,
    name: `A${i}`,
    active: a.active,
    teamIds: a.teamIds,
    ...(a.status ? { status: a.status } : {}),
    statusUntil:
      a.untilMinutes === null || a.status === undefined || a.status === 'available'
        ? null
        : formatTimestamp(NOW_US + a.untilMinutes * 60_000_000),
    capacity: a.capacity,
  }));
  const busy = Object.fromEntries(agents.map((a, i) => [a.id, s.agents[i]?.busy ?? 0]));
  const config = {
    agents,
    teams: [1, 2, 3].map((id) => ({ id, name: `T${id}` })),
  } as unknown as AccountConfig;
  return { agents, busy, config };
}

/** The contract's rule, apart from the implementation. */
function qualifying(s: Scenario): number[] {
  const ids = s.agents.map((_, i) => 10 + i);
  const ofTeam = (i: number) => s.teamId !== null && (s.agents[i]?.teamIds ?? []).includes(s.teamId);
  const teamHasActive = s.agents.some((a, i) => a.active && ofTeam(i));
  return ids.filter((_, i) => {
    const a = s.agents[i] as Scenario['agents'][number];
    const passed = a.untilMinutes !== null && a.untilMinutes <= 0;
    const available = a.status === undefined || a.status === 'available' || passed;
    const room = a.capacity === null || a.busy < a.capacity;
    return a.active && available && room && (!teamHasActive || ofTeam(i));
  });
}

describe('the assignment pick over random agent states', () => {
  it('is a qualifying agent, or none exactly when none qualifies', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { busy, config } = build(s);
        const candidates = candidatesFor(config, s.teamId, NOW_US);
        const state = { cursor: s.cursor, busy: needsOpenWork(s.method, candidates) ? busy : undefined };
        const pick = pickAssignee(s.method, candidates, state);
        const allowed = qualifying(s);
        if (allowed.length === 0) expect(pick).toBeUndefined();
        else expect(allowed).toContain(pick?.id);
        if (pick && s.method === 'least_busy') {
          expect(busy[pick.id]).toBe(Math.min(...allowed.map((id) => busy[id] ?? 0)));
        }
        // What the commit checks: least-busy the count seen, another method a capacity, or nothing.
        if (pick) {
          const condition = pickCondition(s.method, pick, state.busy);
          if (s.method === 'least_busy') expect(condition).toEqual({ chosen: pick.id, seen: busy[pick.id] });
          else if (pick.capacity != null)
            expect(condition).toEqual({ chosen: pick.id, below: pick.capacity });
          else expect(condition).toBeUndefined();
        }
      }),
      { numRuns: 500 },
    );
  });

  it('round-robin takes the cursor turn while nobody is full (K creates over A agents: K/A each)', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { busy, config } = build({ ...s, method: 'round_robin' });
        const candidates = candidatesFor(config, s.teamId, NOW_US);
        fc.pre(
          candidates.length > 0 &&
            candidates.every((a) => a.capacity == null || (busy[a.id] ?? 0) < a.capacity),
        );
        const pick = pickAssignee('round_robin', candidates, { cursor: s.cursor, busy });
        expect(pick).toBe(candidates[(s.cursor - 1) % candidates.length]);
      }),
      { numRuns: 300 },
    );
  });

  it("the queue hand-over's queues of an agent are exactly those whose candidates include them", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { agents, config } = build(s);
        for (const agent of agents) {
          const expected = [1, 2, 3, null].filter((q) =>
            candidatesFor(config, q, NOW_US).some((c) => c.id === agent.id),
          );
          expect(new Set(queuesFor(config, agent, NOW_US))).toEqual(new Set(expected));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("an agent's turns ask at most AGENTLESS_HEADS agentless teams each, and every one within ceil(n / 20) turns", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 500 }), { maxLength: 90 }),
        fc.nat(),
        (ids, seed) => {
          const agentless = [...ids].sort((a, b) => a - b);
          const asked = new Set<number>();
          let after: number | undefined;
          for (let turn = 0; turn < Math.max(1, Math.ceil(agentless.length / AGENTLESS_HEADS)); turn++) {
            const window = agentlessWindow(agentless, seed, after);
            expect(window.length).toBe(Math.min(AGENTLESS_HEADS, agentless.length));
            for (const id of window) asked.add(id);
            after = window.at(-1);
          }
          expect(asked).toEqual(new Set(agentless));
        },
      ),
      { numRuns: 300 },
    );
  });
});
