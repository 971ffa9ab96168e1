import type { Account, BusinessHours, Priority, SlaPolicy } from '#lib/accounts/types.ts';
import { formatTimestamp, parseTimestamp, type Timestamp } from '#lib/time.ts';
import {
  addTarget,
  clockStates,
  type KeptClocks,
  type SlaFields,
  type SlaMetric,
  type SlaTargets,
  targetsOf,
} from './sla-clocks.ts';

/**
 * The service-level policy of a ticket: among the policies whose every condition equals the ticket's, the one
 * with more conditions wins; a tie goes to the earlier policy in the account's list (decisions.md).
 */
export function matchPolicy(
  policies: readonly SlaPolicy[],
  ticket: { priority: Priority; categorySlug: string | null },
): SlaPolicy | undefined {
  let best: SlaPolicy | undefined;
  let bestConditions = -1;
  for (const policy of policies) {
    if (policy.priority !== null && policy.priority !== ticket.priority) continue;
    if (policy.category !== null && policy.category !== ticket.categorySlug) continue;
    const conditions = (policy.priority === null ? 0 : 1) + (policy.category === null ? 0 : 1);
    if (conditions > bestConditions) {
      best = policy;
      bestConditions = conditions;
    }
  }
  return best;
}

/** due_at (the resolution due time) in epoch microseconds, or null when no policy (or no resolution target) applies. */
export function dueAt(
  createdUs: number,
  policy: SlaPolicy | undefined,
  calendar: BusinessHours | null,
): number | null {
  if (!policy || policy.resolutionMinutes === null) return null;
  return addTarget(createdUs, policy.resolutionMinutes, policy.businessHours ? calendar : null);
}

/**
 * What a ticket stores of its service level, decided at create and again at each priority or category change
 * (the one place create and PATCH share): its `due_at` and the matched policy's targets (lib/tickets/sla-clocks.ts).
 */
export function serviceLevelOf(
  account: Pick<Account, 'slaPolicies' | 'businessHours'>,
  ticket: { priority: Priority; categorySlug: string | null; createdUs: number },
): { dueAt: Timestamp | null; slaTargets: SlaTargets | null } {
  const policy = matchPolicy(account.slaPolicies, ticket);
  const due = dueAt(ticket.createdUs, policy, account.businessHours);
  return {
    dueAt: due === null ? null : formatTimestamp(due),
    slaTargets: targetsOf(policy, account.businessHours),
  };
}

/**
 * A ticket after a priority or category change (decisions.md, "Reply-based service levels"): the new policy's
 * targets and `due_at` for the clocks still running, while every clock completed by then is history and keeps
 * its due time, so its completion and breach too (an answer given in time never becomes late afterwards). A
 * completed reply clock is kept in `slaKept` (null due time: it had no target); a resolved or closed ticket keeps
 * its `due_at` (a reopen runs that same due time again, and the next change moves it).
 */
export function retargeted<T extends SlaFields>(
  account: Pick<Account, 'slaPolicies' | 'businessHours'>,
  ticket: T,
  match: { priority: Priority; categorySlug: string | null },
): T {
  const next = serviceLevelOf(account, { ...match, createdUs: parseTimestamp(ticket.createdAt) });
  const clocks = clockStates(ticket);
  const dueOf = (metric: SlaMetric) => {
    const clock = clocks.find((c) => c.metric === metric);
    return clock ? formatTimestamp(clock.dueUs) : null;
  };
  const kept: KeptClocks = {};
  if (ticket.firstReplyAt) kept.first_reply = { startedAt: ticket.createdAt, dueAt: dueOf('first_reply') };
  const cycle = ticket.replyCycle;
  if (cycle?.completedAt) kept.next_reply = { startedAt: cycle.startedAt, dueAt: dueOf('next_reply') };
  const resolved = (ticket.resolvedAt ?? ticket.closedAt ?? null) !== null;
  const { slaKept: _, ...rest } = ticket;
  return {
    ...rest,
    slaTargets: next.slaTargets,
    dueAt: resolved ? ticket.dueAt : next.dueAt,
    ...(Object.keys(kept).length > 0 ? { slaKept: kept } : {}),
  } as T;
}
