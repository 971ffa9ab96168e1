import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import { type FreedEntry, finishFreed, postponeFreed } from '#lib/data/tickets/freed.ts';
import { takeCursor } from '#lib/data/tickets/sequences.ts';
import { getAgentOpenWork, getOpenWork } from '#lib/data/tickets/tickets.ts';
import { statusAt } from '#lib/people/present.ts';
import { nowMicros, nowMillis, parseTimestamp } from '#lib/time.ts';
import {
  agentlessTeams,
  agentlessWindow,
  candidateSetName,
  candidatesFor,
  isAvailable,
  needsOpenWork,
  pickAssignee,
  pickCondition,
  queuesFor,
} from './assignment.ts';
import { handedOver, queueHeadOf } from './hand-over.ts';
import { isOpenWork, queueSortValue, type Ticket } from './types.ts';

/**
 * The queue's hand-over (decisions.md, "People"; docs/decisions.md, "The queue"): when an agent may have freed
 * up, a freed entry names them (lib/data/tickets/freed.ts); the queue runner serves each: the head of the queues
 * they may take from, one ticket at a time, until they are full or the queues are empty.
 */

/** The agent a ticket's change may free: its assignee, whose open work it leaves (resolved, closed, reassigned). */
export function freedByTicketChange(before: Ticket, after: Ticket | undefined): number | undefined {
  if (!before.assignee || !isOpenWork(before)) return undefined;
  if (after && isOpenWork(after) && after.assignee?.id === before.assignee.id) return undefined;
  return before.assignee.id;
}

/**
 * When an agent's change may free them (epoch ms), or undefined: at once when they are, after it, active and
 * available and were not, or have more room, or joined a team; at the end of an away or offline status that has
 * one (the agent comes back then without another change).
 */
export function freedByAgentChange(
  before: Agent | undefined,
  after: Agent,
  nowUs: number,
): number | undefined {
  if (!after.active) return undefined;
  const nowAvailable = isAvailable(after, nowUs);
  if (!nowAvailable) return comesBackAt(after, nowUs);
  if (!before || !isAvailable(before, nowUs)) return Math.floor(nowUs / 1000);
  const room = (a: Agent) => a.capacity ?? Number.POSITIVE_INFINITY;
  const joined = after.teamIds.some((t) => !before.teamIds.includes(t));
  return room(after) > room(before) || joined ? Math.floor(nowUs / 1000) : undefined;
}

/** When an active agent's away or offline status ends (epoch ms), or undefined when it has no end. */
function comesBackAt(agent: Agent, nowUs: number): number | undefined {
  const until = statusAt(agent, nowUs).statusUntil;
  return agent.active && until ? Math.ceil(parseTimestamp(until) / 1000) : undefined;
}

/** Most tickets an agent takes in one turn (the next pass goes on: their entry stays). */
const TURN_LIMIT = 50;

/**
 * One agent's turn: while they are active, available and below their capacity, the head of their queues goes to
 * them in a commit guarded by the ticket's version and their cell (pickCondition), with its `ticket.updated`.
 * Every round reads afresh (the agent's open work, the heads): a lost answer, a race or a crash never hands a
 * ticket twice, since a ticket handed out is no longer at any head and the cell counts it. The agentless teams it
 * asks are one window of them (turnWindow); queues empty and room left with teams still to ask, the entry moves on
 * to the next window for the next pass. Answers how many it gave.
 */
export async function serveFreed(entry: FreedEntry & { agentId: number }): Promise<number> {
  const { accountId, agentId } = entry;
  let given = 0;
  let failures = 0;
  let back: number | undefined;
  let window: { asked: number[]; rest: number } | undefined;
  let emptied = false;
  while (given < TURN_LIMIT) {
    const config = await getAccountConfig(accountId);
    const agent = config?.agents.find((a) => a.id === agentId);
    // Automatic assignment off (or the agent gone): the queue gives nobody a ticket; the entry is done.
    if (!config?.account.autoAssignment?.enabled || !agent) break;
    if (!isAvailable(agent, nowMicros())) {
      back = comesBackAt(agent, nowMicros());
      break;
    }
    window ??= turnWindow(entry, config);
    const asked = window.asked;
    const [open, head] = await Promise.all([
      getAgentOpenWork(accountId, agentId),
      queueHead(accountId, config, agent, (agentless) => asked.filter((id) => agentless.includes(id))),
    ]);
    if (agent.capacity != null && open >= agent.capacity) break;
    if (!head) {
      emptied = true;
      break;
    }
    const condition = pickCondition('round_robin', agent, { [agent.id]: open });
    if (await handedOver(accountId, config, agent, head, condition, ++failures)) {
      given++;
      failures = 0;
    }
  }
  // Away until a time: the entry waits for it. Another freeing (a hand-back's, a ticket's: due at once) may have
  // replaced the one due when the status ends, and deleting it here left nothing to wake the agent back.
  if (back !== undefined) await postponeFreed(entry, back);
  else if (emptied && window && window.rest > 0) {
    const after = window.asked.at(-1);
    await postponeFreed(entry, nowMillis(), {
      rotation: { seed: entry.rotation.seed, after, left: window.rest },
    });
  } else if (given < TURN_LIMIT) await finishFreed(entry);
  return given;
}

/**
 * The agentless teams a turn asks (agentlessWindow: at most AGENTLESS_HEADS, from where the entry's rotation is),
 * and how many of the rotation are still to ask after them.
 */
function turnWindow(entry: FreedEntry, config: AccountConfig) {
  const agentless = agentlessTeams(config);
  const { seed, after, left } = entry.rotation;
  const asked = agentlessWindow(agentless, seed, after);
  // Every one asked (20 or fewer now, even in a rotation begun with more): nothing left to ask.
  if (asked.length >= agentless.length) return { asked, rest: 0 };
  return { asked, rest: (left ?? agentless.length) - asked.length };
}

/**
 * The next ticket the agent may take: the head of each queue the account's method would have them among the
 * candidates of (queuesFor: their teams, a window of the teams with no active agent, which fall back to the
 * account, and the account's own queue), the first in queue order across them (most urgent, then oldest).
 */
async function queueHead(
  accountId: string,
  config: AccountConfig,
  agent: Agent,
  window: (agentless: number[]) => number[],
) {
  const queues = queuesFor(config, agent, nowMicros(), window);
  const heads = await Promise.all(queues.map((teamId) => queueHeadOf(accountId, teamId)));
  return heads
    .filter((t): t is Ticket => t !== undefined)
    .sort((a, b) => (queueSortValue(a) < queueSortValue(b) ? -1 : 1))[0];
}

/**
 * Who takes a ticket handed back (decisions.md, "People": each is unassigned "and re-assigned by the account's
 * method when automatic assignment is on"): the account's method over the ticket's candidates in `config` (the
 * configuration the hand-back's step read, current then: candidatesFor, the team rule and its fallback), the agent it
 * leaves never among them; with the condition its commit checks on the new agent's cell, as a create's. Undefined
 * when assignment is off or nobody qualifies: the ticket is unassigned and waits in its team's queue.
 */
export async function reassignmentOf(
  accountId: string,
  config: AccountConfig | undefined,
  ticket: Ticket,
  leaving: number,
) {
  return config && methodPick(accountId, config, ticket.team?.id ?? null, leaving);
}

/**
 * The account's method over a team's candidates below their capacity as they stand now (candidatesFor; `leaving`
 * never among them), with the condition its commit checks on the agent's cell, as a create's; undefined when
 * automatic assignment is off (the queue and a hand-back pick nobody then) or nobody qualifies.
 */
export async function methodPick(
  accountId: string,
  config: AccountConfig,
  teamId: number | null,
  leaving?: number,
) {
  if (!config.account.autoAssignment?.enabled) return undefined;
  const candidates = candidatesFor(config, teamId, nowMicros()).filter((a) => a.id !== leaving);
  if (candidates.length === 0) return undefined;
  const { method } = config.account.autoAssignment;
  const [busy, cursor] = await Promise.all([
    needsOpenWork(method, candidates) ? getOpenWork(accountId) : undefined,
    method === 'round_robin' ? takeCursor(accountId, candidateSetName(candidates)) : undefined,
  ]);
  const agent = pickAssignee(method, candidates, { cursor, busy });
  if (!agent) return undefined;
  const assignee = { id: agent.id, name: agent.name, email: agent.email };
  return { agent, assignee, condition: pickCondition(method, agent, busy) };
}
