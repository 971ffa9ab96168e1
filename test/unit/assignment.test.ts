import { describe, expect, it } from 'vitest';
import type { Agent } from '#lib/accounts/types.ts';
import { leastBusyPick } from '#lib/tickets/assignment.ts';

/**
 * Least-busy's pick (decisions.md, "Automatic assignment"): the fewest open tickets, ties to the lowest id; a
 * create that lost its pick to a concurrent one picks again at random among the tied, so racers spread.
 */
const agents: Agent[] = [7, 3, 12, 5].map((id) => ({
  id,
  email: `a${id}@desk.test`,
  name: `Agent ${id}`,
  active: true,
  teamIds: [],
}));
// Candidates come in ascending id order (candidatesFor).
const candidates = [...agents].sort((a, b) => a.id - b.id);

describe('least-busy pick', () => {
  it('takes the fewest open tickets, ties to the lowest id', () => {
    expect(leastBusyPick(candidates, {}).id).toBe(3);
    expect(leastBusyPick(candidates, { 3: 2, 5: 1, 7: 1, 12: 4 }).id).toBe(5);
    expect(leastBusyPick(candidates, { 3: 1, 5: 1, 7: 0, 12: 0 }).id).toBe(7);
  });

  it('after a lost pick, spreads over the tied only, every one of them in turn', () => {
    const busy = { 3: 1, 5: 0, 7: 0, 12: 0 };
    const picked = new Set(Array.from({ length: 300 }, () => leastBusyPick(candidates, busy, true).id));
    expect([...picked].sort((a, b) => a - b)).toEqual([5, 7, 12]);
  });
});
