import type { BusinessHours } from '#lib/accounts/types.ts';
import { addBusinessMinutes } from '#lib/tickets/business-hours.ts';
import { conversationOf } from '#lib/tickets/conversation.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { parseTimestamp, type Timestamp } from '#lib/time.ts';
import { firstFailure } from './conditions.ts';
import { byPosition, type Rule, type TimeSettings, type TimeSince } from './types.ts';

/**
 * When time rules fire (decisions.md, "Business rules", `on: time`): a rule's moment on a ticket is its `since`
 * plus `after_minutes` (opening minutes of the account's calendar when `business_hours`, the SLA clocks' own
 * calendar code), rounded up to the whole minute: never before. Once per ticket per value of `since`: the caller
 * keeps, per rule, the `since` value it last looked at (`looked`), and a new value is a new cycle. Only moments
 * after the rule's version was made count. docs/rules.md, "Time rules", says what the due index does with these.
 */

const MINUTE_US = 60_000_000;

/** The `since` values a ticket's rules were last looked at with, by rule id (a cycle looked at never fires again). */
export type LookedCycles = Readonly<Record<string, Timestamp>>;

export interface TimeOptions {
  /** The account's calendar; null: none (a rule asking for business hours then counts calendar time). */
  calendar: BusinessHours | null;
  looked: LookedCycles;
}

/** The ticket's value of a time rule's `since`; null: none (no one waits). */
export function sinceValue(ticket: Ticket, since: TimeSince): Timestamp | null {
  switch (since) {
    case 'created_at':
      return ticket.createdAt;
    case 'updated_at':
      return ticket.updatedAt;
    case 'waiting_since':
      return conversationOf(ticket).waitingSince;
    case 'last_message_at':
      return conversationOf(ticket).lastMessageAt;
    case 'status_changed_at':
      // A ticket stored before the field: its last change, at or after its last status change (late, never early).
      return ticket.statusChangedAt ?? ticket.updatedAt;
  }
}

/** The rule's moment on the ticket in this cycle (epoch µs, a whole minute), or null: none, or already looked at. */
export function ruleMoment(ticket: Ticket, rule: Rule, options: TimeOptions): number | null {
  if (rule.on !== 'time' || rule.time === null || !rule.active) return null;
  const since = sinceValue(ticket, rule.time.since);
  if (since === null || options.looked[String(rule.id)] === since) return null;
  const moment = momentAfter(parseTimestamp(since), rule.time, options.calendar);
  return moment <= parseTimestamp(rule.updatedAt) ? null : moment;
}

/** A time rule's moment from its `since` value (epoch µs): `after_minutes` on, rounded up to the whole minute. */
export function momentAfter(sinceUs: number, time: TimeSettings, calendar: BusinessHours | null): number {
  const atUs =
    time.businessHours && calendar
      ? addBusinessMinutes(sinceUs, time.afterMinutes, calendar)
      : sinceUs + time.afterMinutes * MINUTE_US;
  return Math.ceil(atUs / MINUTE_US) * MINUTE_US;
}

/**
 * The next moment any of the rules would fire on the ticket as it is, and which rules are due then; null: none
 * (a closed ticket changes no more). Rules whose conditions do not hold now are left out: conditions read only the
 * ticket, so they cannot come to hold without a change, and a change asks again. A moment already passed is
 * returned as it is (due at once): a stalled runner, or a change that made the conditions hold within the cycle
 * (docs/rules.md, "Time rules").
 */
export function nextRuleMoment(
  ticket: Ticket,
  rules: readonly Rule[],
  options: TimeOptions,
): { atUs: number; ruleIds: number[] } | null {
  if (ticket.status === 'closed') return null;
  let next: { atUs: number; ruleIds: number[] } | null = null;
  for (const rule of [...rules].sort(byPosition)) {
    const atUs = ruleMoment(ticket, rule, options);
    if (atUs === null || (next !== null && atUs > next.atUs)) continue;
    if (firstFailure(rule.conditions, { now: ticket, before: null, facts: { via: 'rule' } }) !== null)
      continue;
    if (next === null || atUs < next.atUs) next = { atUs, ruleIds: [rule.id] };
    else next.ruleIds.push(rule.id);
  }
  return next;
}

/**
 * The time rules due on the ticket at `atUs` (their moment passed, their cycle not looked at), in position order:
 * the time change runs them through the evaluator (their conditions looked at there, so `rules/test` can say why
 * one did not fire), then keeps each one's `since` value in `looked`, fired or not.
 */
export function dueTimeRules(
  ticket: Ticket,
  rules: readonly Rule[],
  atUs: number,
  options: TimeOptions,
): Rule[] {
  return rules
    .filter((rule) => {
      const moment = ruleMoment(ticket, rule, options);
      return moment !== null && moment <= atUs;
    })
    .sort(byPosition);
}

/** The `looked` record after a time change ran `due` on the ticket (as it was when they were due). */
export function lookedAfter(
  ticket: Ticket,
  due: readonly Rule[],
  looked: LookedCycles,
): Record<string, Timestamp> {
  const next: Record<string, Timestamp> = { ...looked };
  for (const rule of due) {
    const since = rule.time && sinceValue(ticket, rule.time.since);
    if (since) next[String(rule.id)] = since;
  }
  return next;
}
