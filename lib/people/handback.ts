import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import { getHandBack, type HandBack, type HandBackPart, saveHandBack } from '#lib/data/people/handbacks.ts';
import { getStoredAgent } from '#lib/data/people/people.ts';
import { lostToRace, StaleVersion } from '#lib/data/store/errors.ts';
import { markFreed } from '#lib/data/tickets/freed.ts';
import {
  agentTickets,
  getAgentOpenWork,
  getTicketByOrderKey,
  inSharedBlockOrder,
  ticketsFitTogether,
  updateTicketsTogether,
} from '#lib/data/tickets/tickets.ts';
import { momentKeeper } from '#lib/rules/in-change.ts';
import { commitFollowUp, followUps } from '#lib/tickets/follow-up-update.ts';
import { reassignmentOf } from '#lib/tickets/queue.ts';
import { BUSY_STATUSES, type Ticket } from '#lib/tickets/types.ts';
import { nowMicros } from '#lib/time.ts';

/**
 * Handing back an agent's open tickets (decisions.md, "People": a retirement, or leaving a team, unassigns each of
 * their open, pending and in_progress tickets within 60 seconds, each with its own `ticket.updated`). The people
 * change writes a hand-back naming each agent and the team left (lib/data/people/handbacks.ts); a step reads one
 * page of an agent's tickets in one open status (the status-and-assignee queue, oldest first, from where the last
 * step ended) and hands back each that is still theirs (of the team left, when one was): to whom the account's
 * method picks when automatic assignment is on, else unassigned (to wait in its queue), each guarded by the version
 * read (those unassigned several in a commit: handBackPage), then saves where it got to. The ticket index has no team dimension: a team's
 * tickets are the agent's, kept by their `team`.
 */

/** Tickets a step reads. */
export const HAND_BACK_STEP = 25;

/** What a change of agents owes: a retirement every team's tickets, a team left (by an active agent) its own. */
export function handBackParts(before: ReadonlyMap<number, Agent>, after: readonly Agent[]): HandBackPart[] {
  return after.flatMap((agent): HandBackPart[] => {
    const was = before.get(agent.id);
    if (!was?.active) return [];
    if (!agent.active) return [{ agent: agent.id, team: null, step: 0, after: null }];
    return was.teamIds
      .filter((t) => !agent.teamIds.includes(t))
      .map((team) => ({ agent: agent.id, team, step: 0, after: null }));
  });
}

/**
 * One step of a hand-back: `done` once no part is left (the item deleted), `lost` when another run saved it first
 * (it goes on), `more` otherwise. A commit that failed is thrown once the page's others have settled; the step's
 * place is not saved, so the next reads the page again and finds what landed no longer the agent's.
 */
export async function handBackStep(accountId: string, id: string): Promise<'more' | 'done' | 'lost'> {
  const handBack = await getHandBack(accountId, id);
  if (!handBack) return 'done';
  const [part, ...rest] = handBack.parts;
  if (!part) return (await saveHandBack(handBack, [])) ? 'done' : 'lost';
  // Undone meanwhile (the agent active again, or back in the team): their tickets are theirs again.
  if (!stillOwed(part, await getStoredAgent(accountId, part.agent))) return save(handBack, rest);
  const status = BUSY_STATUSES[part.step] ?? 'open';
  // The configuration once a step, beside its page (not once a ticket: one GetItem of its version each): the
  // step's re-assignments see the agents as they were when it began, as a create's see them when it began.
  const [listed, config] = await Promise.all([
    agentTickets(accountId, part.agent, status, { after: part.after, limit: HAND_BACK_STEP }),
    getAccountConfig(accountId),
  ]);
  await handBackPage(accountId, config, part, listed);
  const last = listed.at(-1);
  const next: HandBackPart | undefined =
    listed.length === HAND_BACK_STEP && last
      ? { ...part, after: last.at }
      : part.step + 1 < BUSY_STATUSES.length
        ? { ...part, step: part.step + 1, after: null }
        : await sweepAgain(accountId, part);
  // A team left, all of it handed back: the agent, still active and maybe below capacity again, takes the queues
  // they still serve (decisions.md: an agent a reassignment frees takes the queue's next). Before the place is
  // saved, so a crash between them writes it again when the step runs again.
  if (!next && part.team !== null) await markFreed(accountId, part.agent, Math.floor(nowMicros() / 1000));
  return save(handBack, next ? [next, ...rest] : rest);
}

async function save(handBack: HandBack, parts: HandBackPart[]): Promise<'more' | 'done' | 'lost'> {
  if (!(await saveHandBack(handBack, parts))) return 'lost';
  return parts.length > 0 ? 'more' : 'done';
}

const stillOwed = (part: HandBackPart, agent: Agent | undefined) =>
  agent !== undefined && (part.team === null ? !agent.active : !agent.teamIds.includes(part.team));

/** Sweeps of a retirement at most: each finds what moved between statuses behind the last, or a late create. */
const MAX_ROUNDS = 3;

/**
 * A retirement's sweep is done when the agent's open work (least-busy's cell, exact) is 0; else a ticket moved
 * between open statuses behind the sweep (pending back to open), or a create that read the agent before the
 * retirement landed after it: the sweep begins again, MAX_ROUNDS times at most. A team's has no count to check.
 */
async function sweepAgain(accountId: string, part: HandBackPart): Promise<HandBackPart | undefined> {
  const rounds = (part.rounds ?? 0) + 1;
  if (part.team !== null || rounds >= MAX_ROUNDS) return undefined;
  if ((await getAgentOpenWork(accountId, part.agent)) === 0) return undefined;
  return { ...part, step: 0, after: null, rounds };
}

const owed = (part: HandBackPart, ticket: Ticket) =>
  ticket.assignee?.id === part.agent &&
  BUSY_STATUSES.includes(ticket.status) &&
  (part.team === null || ticket.team?.id === part.team);

/** Tickets one commit hands back together at most (fewer when their actions do not fit: ticketsFitTogether). */
export const HAND_BACK_TOGETHER = 8;

type Listed = { at: string; stored: { entity: Ticket; version: number } };

/**
 * Hands back a page's tickets still owed. One re-assigned by the account's method is committed alone (its pick
 * takes a cursor or reads the counts, and its commit is conditioned on the new assignee's cell). Those handed back
 * unassigned are committed several at a time (updateTicketsTogether: each guarded by its version, with its own
 * event; the agent's cell, the counts and queue shards and the blocks written once with the deltas summed), one
 * commit after another (they share the agent's cell). A commit refused (one of them changed since the page was
 * read, or a conflict with a user's change on an item they share) is tried again with half as many, down to one
 * ticket, read again and decided again (handBackTicket): a change racing the hand-back never starves it.
 */
async function handBackPage(
  accountId: string,
  config: AccountConfig | undefined,
  part: HandBackPart,
  listed: { at: string; stored?: { entity: Ticket; version: number } | undefined }[],
): Promise<void> {
  const owedNow = listed.filter((l): l is Listed => l.stored !== undefined && owed(part, l.stored.entity));
  const picks = await Promise.all(
    owedNow.map((l) => reassignmentOf(accountId, config, l.stored.entity, part.agent)),
  );
  const alone = owedNow.flatMap((l, i) => (picks[i]?.assignee ? [{ ...l, pick: picks[i] }] : []));
  // Those of one block side by side: a commit of them writes each block once (inSharedBlockOrder).
  let left = inSharedBlockOrder(
    owedNow.filter((_, i) => !picks[i]?.assignee),
    (l) => l.stored.entity.number,
  );
  const settled = await Promise.allSettled(
    alone.map((l) => handBackTicket(accountId, config, part, l.at, l.stored, l.pick)),
  );
  // Their next time-rule moments (assignee and updated_at move), over the rules as the page found them.
  const moment = left.length > 0 ? await momentKeeper(accountId, config) : (t: Ticket) => t;
  let limit = HAND_BACK_TOGETHER;
  while (left.length > 0) {
    const changes = followUps(
      left.slice(0, limit).map(({ stored }) => ({ stored, change: unassigned })),
      moment,
    );
    const fit = Math.min(limit, ticketsFitTogether(accountId, changes));
    if (fit <= 1) {
      const [one] = left;
      left = left.slice(1);
      if (one) await handBackTicket(accountId, config, part, one.at, one.stored);
      limit = Math.min(HAND_BACK_TOGETHER, limit * 2);
      continue;
    }
    try {
      await updateTicketsTogether(accountId, changes.slice(0, fit));
      left = left.slice(fit);
      limit = Math.min(HAND_BACK_TOGETHER, limit * 2);
    } catch (error) {
      if (!lostToRace(error)) throw error;
      limit = Math.floor(fit / 2);
    }
  }
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
}

const unassigned = (ticket: Ticket): Ticket => ({ ...ticket, assignee: null });

/**
 * Hands back a ticket still owed, at the version read: to whom the account's method picks (reassignmentOf; `pick`,
 * when the page picked already), else unassigned. Another change landing first (a reply, a status) is read again
 * and tried once more; a ticket reassigned meanwhile, or no longer open, is left alone.
 */
async function handBackTicket(
  accountId: string,
  config: AccountConfig | undefined,
  part: HandBackPart,
  at: string,
  stored: { entity: Ticket; version: number },
  pick?: Awaited<ReturnType<typeof reassignmentOf>>,
): Promise<void> {
  let current: { entity: Ticket; version: number } | undefined = stored;
  let picked = pick;
  for (let attempt = 0; current && owed(part, current.entity) && attempt < 3; attempt++) {
    try {
      // Re-assigned by the account's method when automatic assignment is on, else (or nobody qualifying) unassigned.
      const next = picked ?? (await reassignmentOf(accountId, config, current.entity, part.agent));
      picked = undefined;
      const assignee = next?.assignee ?? null;
      await commitFollowUp(accountId, current, (ticket) => ({ ...ticket, assignee }), next?.condition);
      return;
    } catch (error) {
      // Another change first, or the new assignee's cell no longer what the pick saw: read again, decide again.
      if (!lostToRace(error)) throw error;
      current = await getTicketByOrderKey(accountId, at);
    }
  }
  // Still owed after three lost races: the step fails, and the next reads the page again.
  if (current && owed(part, current.entity)) throw new StaleVersion();
}
