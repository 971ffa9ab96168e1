import { forgetAccountConfig, getAccountConfig } from '#lib/accounts/config-cache.ts';
import { type FreedEntry, finishFreed, postponeFreed } from '#lib/data/tickets/freed.ts';
import { getTeamWake } from '#lib/data/tickets/team-wake.ts';
import { nowMillis } from '#lib/time.ts';
import { agentlessTeams } from './assignment.ts';
import { handedOver, queueHeadOf } from './hand-over.ts';
import { methodPick } from './queue.ts';

/**
 * A team wake's turn (docs/decisions.md, "The queue"): the teams a change left with no active agent
 * (lib/data/tickets/team-wake.ts) have their waiting tickets handed to the account's agents with room at once, not
 * when one of those next frees up. Team by team, the head of its queue goes to whom the account's method picks
 * among its candidates below their capacity (methodPick: what a create for the team gives), through the hand-over
 * an agent's turn uses (version read, the agent's cell, once only), until the queue is empty; nobody with room
 * ends the turn and deletes the wake: every agentless team has the same candidates (every available agent of the
 * account), and each of them serves these queues when they next free up (queuesFor), as before the wake.
 */

/** The most queue heads a turn reads (so the most tickets it hands out); the rest is the next pass's. */
const WAKE_HEADS = 25;

export async function serveWake(entry: FreedEntry): Promise<number> {
  const wake = await getTeamWake(entry.accountId);
  if (!wake) return 0;
  // The configuration as stored, not a cached copy: one older than the change that woke a team (another container's,
  // its version move lost) would show the team still staffed, and the wake would drop it for good.
  forgetAccountConfig(entry.accountId);
  // As stored: a change since the due index was read moved its key, and is served with it.
  const read = { ...entry, gsi2sk: wake.gsi2sk };
  const turn = { given: 0, heads: 0, failures: 0 };
  const served: number[] = [];
  for (const teamId of wake.teams) {
    const outcome = await serveTeam(entry.accountId, teamId, turn);
    if (outcome === 'nobody') {
      await finishFreed(read);
      return turn.given;
    }
    if (outcome === 'more') break;
    served.push(teamId);
  }
  // Every team served: deleted; else the served ones out and due again at once (both only as read: a change since
  // added teams, and the next pass serves them all).
  if (served.length === wake.teams.length) await finishFreed(read);
  else await postponeFreed(read, nowMillis(), { served });
  return turn.given;
}

/**
 * One team's queue to the account's agents: `served` once empty (or the team deleted, or staffed again: its own
 * agents' freeings serve it then), `nobody` when no candidate has room, `more` when the turn's reads are spent.
 * Every round reads afresh (the configuration, the head, the pick's cells), as an agent's turn does.
 */
async function serveTeam(
  accountId: string,
  teamId: number,
  turn: { given: number; heads: number; failures: number },
): Promise<'served' | 'nobody' | 'more'> {
  for (;;) {
    if (turn.heads >= WAKE_HEADS) return 'more';
    const config = await getAccountConfig(accountId);
    if (!config || !agentlessTeams(config).includes(teamId)) return 'served';
    turn.heads++;
    const head = await queueHeadOf(accountId, teamId);
    if (!head) return 'served';
    // Nobody with room, or automatic assignment off (the queue gives nobody a ticket then): the wake ends.
    const pick = await methodPick(accountId, config, teamId);
    if (!pick) return 'nobody';
    if (await handedOver(accountId, config, pick.agent, head, pick.condition, ++turn.failures)) {
      turn.given++;
      turn.failures = 0;
    }
  }
}
