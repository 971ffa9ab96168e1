import * as v from 'valibot';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { eventsInWindow } from '#lib/data/events.ts';
import { EVENT_SHARDS } from '#lib/data/keys.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { nowMicros } from '#lib/time.ts';
import { futureTimeWire, instantTime } from '#lib/validation/time-fields.ts';
import { optionalField, parseInput, requiredField } from '#lib/validation.ts';
import { BACKTEST_EVENT_TYPES, backtestChanges, changesOf } from './backtest-changes.ts';
import { findRule } from './resource.ts';

/**
 * `POST /api/rules/{rule}/backtest` (decisions.md, "Business rules"; docs/rules.md, "Backtest"): what a saved rule
 * would have done over the changes of a window of the last 30 days, read from the events feed, writing nothing.
 * A window is read a bounded part at a time: the answer counts the part read, and `next_cursor` (sent back as
 * `after`, with the same window) reads on.
 */

/** How far back a window may start: the feed keeps events 30 days. */
export const BACKTEST_DAYS = 30;
/** Feed items one call reads at most (`limit`'s default and most). */
export const MAX_BACKTEST_ITEMS = 5_000;
/** Tickets the answer names at most. */
const MAX_TICKETS = 100;

const CURSOR = /^[0-9a-z]{1,11}$/;

export const BacktestSchema = v.object({
  from: requiredField('from', instantTime('from'), futureTimeWire),
  to: optionalField(instantTime('to'), futureTimeWire),
  after: optionalField(
    v.pipe(
      v.string('The after field must be a string.'),
      v.regex(CURSOR, 'The after field must be a next_cursor this endpoint answered.'),
      v.transform((s) => Number.parseInt(s, 36)),
    ),
    v.pipe(v.string(), v.maxLength(11), v.regex(CURSOR)),
  ),
  limit: optionalField(
    v.pipe(
      v.number('The limit field must be a number.'),
      v.integer('The limit field must be an integer.'),
      v.minValue(EVENT_SHARDS, `The limit field must be at least ${EVENT_SHARDS}.`),
      v.maxValue(MAX_BACKTEST_ITEMS, `The limit field must not be greater than ${MAX_BACKTEST_ITEMS}.`),
    ),
    v.pipe(v.number(), v.integer(), v.minValue(EVENT_SHARDS), v.maxValue(MAX_BACKTEST_ITEMS)),
  ),
});

export interface BacktestResult {
  /** The changes of the rule's kind in the part read (a time rule: every ticket change). */
  changes: number;
  /** How many of them the rule would have fired on. */
  would_fire: number;
  /** The tickets it would have fired on, the first 100 (each once). */
  tickets: string[];
  /** Send it back as `after` (with the same window) to read on; null: the window is read to its end. */
  next_cursor: string | null;
}

export async function backtestRule(accountId: string, ref: string, body: unknown): Promise<BacktestResult> {
  // An unknown rule is a 404 whatever else is wrong: the route looks it up when the body is refused.
  const input = parseInput(BacktestSchema, body);
  const [found, config] = await Promise.all([findRule(accountId, ref), getAccountConfig(accountId)]);
  if (!found || !config) throw new NotFound();
  const nowMs = nowMicros() / 1000;
  const from = Math.floor(input.from / 1000);
  const to = input.to === undefined ? nowMs : Math.floor(input.to / 1000);
  if (from < nowMs - BACKTEST_DAYS * 86_400_000) {
    throw ValidationFailed.field('from', `The from field must be within the last ${BACKTEST_DAYS} days.`);
  }
  // Left out, `to` is now: a `from` not before it is the field the client sent wrong.
  if (to <= from && input.to === undefined) {
    throw ValidationFailed.field('from', 'The from field must be a time in the past.');
  }
  if (to <= from) throw ValidationFailed.field('to', 'The to field must be a time after from.');
  const part = await eventsInWindow(accountId, {
    from,
    to,
    after: input.after,
    matches: (type) => BACKTEST_EVENT_TYPES.includes(type),
    maxItems: input.limit ?? MAX_BACKTEST_ITEMS,
  });
  const calendar = config.account.businessHours ?? null;
  const { changes, fired } = backtestChanges(found.entity, changesOf(part.events), {
    from,
    until: Math.min(to, nowMs),
    calendar,
  });
  return {
    changes,
    would_fire: fired.length,
    tickets: [...new Set(fired)].slice(0, MAX_TICKETS),
    next_cursor: part.next === undefined ? null : part.next.toString(36),
  };
}
