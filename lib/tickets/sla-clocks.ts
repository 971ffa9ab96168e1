import type { BusinessHours, SlaPolicy } from '#lib/accounts/types.ts';
import { formatTimestamp, parseTimestamp, type Timestamp } from '#lib/time.ts';
import { addBusinessMinutes } from './business-hours.ts';

/**
 * The service-level clocks of a ticket (decisions.md, "Reply-based service levels"), computed from what the
 * ticket stores, and nothing else: pure, so the API's answers, the due entry the index engine keeps, the
 * `sla=breached` dimension and the breach runner all read the same clocks. docs/data-model.md, "Service-level
 * clocks".
 *
 * What the ticket stores for them:
 * - `slaTargets`: the matched policy's name and targets, with the account's calendar when the policy counts
 *   business hours (a snapshot taken at create and at each priority or category change, as `due_at` always was);
 * - `createdAt`, `dueAt` (the resolution due time), `resolvedAt`, `closedAt`;
 * - `firstReplyAt` (the first public agent message) and `replyCycle` (the next-reply clock's current or last
 *   cycle), kept by the message writes;
 * - `slaBreaches`: the breaches the runner wrote, one per metric, naming the cycle (its start) and due time;
 * - `slaKept`: the reply clocks that were completed when a priority or category change came, with the due time
 *   they had (history: the change moves only running clocks).
 */

export const SLA_METRICS = ['first_reply', 'next_reply', 'resolution'] as const;
export type SlaMetric = (typeof SLA_METRICS)[number];

/** The matched policy as a ticket keeps it: its targets, and the calendar they count in (null: calendar time). */
export interface SlaTargets {
  policy: string;
  firstReplyMinutes: number | null;
  nextReplyMinutes: number | null;
  resolutionMinutes: number | null;
  calendar: BusinessHours | null;
}

/**
 * A breach the runner wrote: the clock's cycle (its start) and the due time that passed; `earlier`, the other due
 * times of the same cycle it already wrote a breach for (a priority or category change moved the due time, then
 * moved it back: a breach already written for a due time is never written again, and still counts as breached).
 */
export interface SlaBreach {
  startedAt: Timestamp;
  dueAt: Timestamp;
  earlier?: Timestamp[];
}
export type SlaBreaches = Partial<Record<SlaMetric, SlaBreach>>;

/**
 * Reply clocks a priority or category change found completed: the clock (its start) and the due time it had, null
 * when it had no target then. Such a clock keeps that due time, so its completion and breach too, whatever the
 * targets the ticket holds now (decisions.md: a completed clock is history). The resolution clock needs none: a
 * change leaves `dueAt` as it is while the ticket is resolved (lib/tickets/sla.ts, retargeted).
 */
export type KeptClocks = Partial<
  Record<'first_reply' | 'next_reply', { startedAt: Timestamp; dueAt: Timestamp | null }>
>;

/** The stored fields the clocks are derived from (absent is null: tickets written before the clocks). */
export interface SlaFields {
  createdAt: Timestamp;
  dueAt: Timestamp | null;
  resolvedAt: Timestamp | null;
  closedAt: Timestamp | null;
  slaTargets?: SlaTargets | null | undefined;
  firstReplyAt?: Timestamp | null | undefined;
  replyCycle?: { startedAt: Timestamp; completedAt: Timestamp | null } | null | undefined;
  slaBreaches?: SlaBreaches | null | undefined;
  slaKept?: KeptClocks | null | undefined;
}

/** A clock as the API shows it. */
export interface Clock {
  due_at: Timestamp;
  completed_at: Timestamp | null;
  breached_at: Timestamp | null;
}

export interface Sla {
  policy: string | null;
  first_reply: Clock | null;
  next_reply: Clock | null;
  resolution: Clock | null;
}

/** One running or finished clock, in epoch microseconds. */
export interface ClockState {
  metric: SlaMetric;
  startedAt: Timestamp;
  dueUs: number;
  completedUs: number | null;
}

/** The targets a ticket keeps of its matched policy (none matched: null). */
export function targetsOf(policy: SlaPolicy | undefined, calendar: BusinessHours | null): SlaTargets | null {
  if (!policy) return null;
  return {
    policy: policy.name,
    firstReplyMinutes: policy.firstReplyMinutes ?? null,
    nextReplyMinutes: policy.nextReplyMinutes ?? null,
    resolutionMinutes: policy.resolutionMinutes ?? null,
    calendar: policy.businessHours ? calendar : null,
  };
}

/** `minutes` after `startUs`, in calendar time or counted inside the calendar's opening hours. */
export function addTarget(startUs: number, minutes: number, calendar: BusinessHours | null): number {
  return calendar ? addBusinessMinutes(startUs, minutes, calendar) : startUs + minutes * 60_000_000;
}

const us = (t: Timestamp | null | undefined) => (t ? parseTimestamp(t) : null);

/**
 * The ticket's clocks, first reply, next reply, resolution (a clock absent when the policy has no such target,
 * or, for next reply, before its first cycle). Each due time is counted from its own start with the targets the
 * ticket holds now, so a priority or category change (new targets) moves every running clock's due time; a reply
 * clock the change found completed keeps the due time it had (`slaKept`).
 */
export function clockStates(t: SlaFields): ClockState[] {
  const targets = t.slaTargets ?? null;
  const calendar = targets?.calendar ?? null;
  /** A reply clock's due time: kept, or counted from its start; undefined: no clock (no target). */
  const dueOf = (metric: keyof KeptClocks, startedAt: Timestamp, minutes: number | null | undefined) => {
    const kept = t.slaKept?.[metric];
    if (kept?.startedAt === startedAt) return kept.dueAt === null ? undefined : parseTimestamp(kept.dueAt);
    return minutes == null ? undefined : addTarget(parseTimestamp(startedAt), minutes, calendar);
  };
  const clocks: ClockState[] = [];
  const firstDue = dueOf('first_reply', t.createdAt, targets?.firstReplyMinutes);
  if (firstDue !== undefined) {
    clocks.push({
      metric: 'first_reply',
      startedAt: t.createdAt,
      dueUs: firstDue,
      completedUs: us(t.firstReplyAt),
    });
  }
  const cycle = t.replyCycle ?? null;
  const nextDue = cycle ? dueOf('next_reply', cycle.startedAt, targets?.nextReplyMinutes) : undefined;
  if (cycle && nextDue !== undefined) {
    clocks.push({
      metric: 'next_reply',
      startedAt: cycle.startedAt,
      dueUs: nextDue,
      completedUs: us(cycle.completedAt),
    });
  }
  // The resolution due time is the ticket's `due_at` (kept as it always was); a ticket from before the clocks
  // has one without targets. A reopen clears resolved_at: the same due time runs again.
  if (t.dueAt) {
    clocks.push({
      metric: 'resolution',
      startedAt: t.createdAt,
      dueUs: parseTimestamp(t.dueAt),
      completedUs: us(t.resolvedAt) ?? us(t.closedAt),
    });
  }
  return clocks;
}

/**
 * A clock's breach time: its due time when it was not completed by then (completed after it, or still running
 * once `nowUs` is past it), else null. Never the time the breach was noticed.
 */
export function breachedAtUs(clock: ClockState, nowUs: number): number | null {
  if (clock.completedUs !== null) return clock.completedUs > clock.dueUs ? clock.dueUs : null;
  return nowUs > clock.dueUs ? clock.dueUs : null;
}

/** The ticket's `sla` as the API shows it, at `nowUs`. */
export function presentSla(t: SlaFields, nowUs: number): Sla {
  const shown = (metric: SlaMetric): Clock | null => {
    const clock = clockStates(t).find((c) => c.metric === metric);
    if (!clock) return null;
    const breached = breachedAtUs(clock, nowUs);
    return {
      due_at: formatTimestamp(clock.dueUs),
      completed_at: clock.completedUs === null ? null : formatTimestamp(clock.completedUs),
      breached_at: breached === null ? null : formatTimestamp(breached),
    };
  };
  return {
    policy: t.slaTargets?.policy ?? null,
    first_reply: shown('first_reply'),
    next_reply: shown('next_reply'),
    resolution: shown('resolution'),
  };
}

/**
 * The ticket's place in `sort=due`: its soonest due time among the clocks not completed (breached or not), as
 * epoch microseconds in 17 digits, so that string order is time order; `~` (after every digit) when it has none:
 * those come last. Ties go newest first (the index engine's sorted postings).
 */
export function dueSortValue(t: SlaFields): string {
  let soonest: number | undefined;
  for (const clock of clockStates(t)) {
    if (clock.completedUs !== null) continue;
    if (soonest === undefined || clock.dueUs < soonest) soonest = clock.dueUs;
  }
  return soonest === undefined ? '~' : String(soonest).padStart(17, '0');
}
