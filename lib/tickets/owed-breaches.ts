import { formatTimestamp, parseTimestamp } from '#lib/time.ts';
import {
  breachedAtUs,
  type ClockState,
  clockStates,
  type SlaBreaches,
  type SlaFields,
} from './sla-clocks.ts';

/**
 * The breaches a ticket's service-level clocks owe, and those the runner (or a change) wrote (docs/sla.md,
 * "Exactly once per cycle"): pure, from what the ticket stores (sla-clocks.ts), so the due entry, the
 * `sla=breached` dimension, the runner and the changes that replace a clock all decide alike.
 */

/** Whether the runner wrote this clock's breach (same cycle, same due time). */
export function isRecorded(t: SlaFields, clock: ClockState): boolean {
  const breach = t.slaBreaches?.[clock.metric];
  if (breach === undefined || breach.startedAt !== clock.startedAt) return false;
  return [breach.dueAt, ...(breach.earlier ?? [])].some((due) => parseTimestamp(due) === clock.dueUs);
}

/**
 * Whether a clock may still owe a breach: not written yet, and running or completed after its due time (a reply
 * that came late, while the runner was stalled or racing it, does not take its breach away).
 */
const owes = (t: SlaFields, clock: ClockState) =>
  (clock.completedUs === null || clock.completedUs > clock.dueUs) && !isRecorded(t, clock);

/**
 * The ticket's soonest due time still to watch (epoch microseconds): of its clocks that may still owe a breach.
 * The index engine keeps it as the ticket's due entry; none: no entry.
 */
export function nextDueUs(t: SlaFields): number | undefined {
  let soonest: number | undefined;
  for (const clock of clockStates(t)) {
    if (!owes(t, clock)) continue;
    if (soonest === undefined || clock.dueUs < soonest) soonest = clock.dueUs;
  }
  return soonest;
}

/**
 * The clocks whose breach is to be written at `nowUs`: past their due time and not completed by then (still
 * running, or completed late), their breach not written yet.
 */
export function breachesDue(t: SlaFields, nowUs: number): ClockState[] {
  return clockStates(t).filter((clock) => owes(t, clock) && breachedAtUs(clock, nowUs) !== null);
}

/** A clock's cycle and due time: what a breach is written once for. */
const breachKey = (clock: ClockState) => `${clock.metric}|${clock.startedAt}|${clock.dueUs}`;

/**
 * The breaches a change would lose (docs/sla.md, "Exactly once per cycle"): clocks the ticket owes at `nowUs`
 * (breachesDue) that it no longer owes once changed, because the change replaced them, not because it completed
 * them in time (a completion at `nowUs` past the due time keeps the breach owed): a requester's message that
 * starts a new next-reply cycle after a late reply, a priority or category change that moves a passed due time.
 * The change writes them in its own commit, so no breach waits on the runner having passed between two changes.
 */
export function breachesLost(before: SlaFields, after: SlaFields, nowUs: number): ClockState[] {
  const kept = new Set(breachesDue(after, nowUs).map(breachKey));
  return breachesDue(before, nowUs).filter((clock) => !kept.has(breachKey(clock)));
}

/** The ticket's fields with these breaches written (the runner's commit, or a change's lost ones). */
export function withBreaches<T extends SlaFields>(t: T, clocks: ClockState[]): T {
  const breaches: SlaBreaches = { ...(t.slaBreaches ?? {}) };
  for (const clock of clocks) {
    const prior = breaches[clock.metric];
    const dueAt = formatTimestamp(clock.dueUs);
    // The same cycle's other due times stay recorded (one entry each: the policies' targets bound them).
    const earlier =
      prior && prior.startedAt === clock.startedAt
        ? [...new Set([...(prior.earlier ?? []), prior.dueAt])].filter((due) => due !== dueAt)
        : [];
    breaches[clock.metric] = { startedAt: clock.startedAt, dueAt, ...(earlier.length ? { earlier } : {}) };
  }
  return { ...t, slaBreaches: breaches };
}

/**
 * Whether the ticket is in `sla=breached`: a clock whose breach was written and that is still running (same
 * cycle, same due time, not completed). Derived from stored state only, so the dimension moves in the commits
 * that change it: the runner's breach, the reply or resolution that completes the clock.
 */
export function isBreached(t: SlaFields): boolean {
  return clockStates(t).some((clock) => clock.completedUs === null && isRecorded(t, clock));
}
