import * as v from 'valibot';
import {
  EVENT_ID_PATTERN,
  type EventRecord,
  getEvent,
  isEventId,
  readFeed,
  UnknownEventCursor,
} from '#lib/data/events.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { param, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { parseInput } from '#lib/validation.ts';
import { EVENT_TYPE_PATTERNS, matchesEventType } from './types.ts';

export const DEFAULT_EVENT_LIMIT = 50;
export const MAX_EVENT_LIMIT = 100;

/** The `listEvents` route's query: `after` (an event id), `limit` (1..100), `type` (repeatable). */
export const EventFeedQueryParams = v.object({
  after: param(
    'after',
    v.pipe(v.string(), v.regex(EVENT_ID_PATTERN, 'The after field must be the id of an event.')),
    v.pipe(v.string(), v.maxLength(24), v.regex(EVENT_ID_PATTERN)),
  ),
  limit: param('limit', wholeNumber('limit', 1, MAX_EVENT_LIMIT), wholeNumberWire(1, MAX_EVENT_LIMIT)),
  type: v.optional(
    v.pipe(
      v.array(v.string()),
      wire<string[]>(
        v.pipe(v.array(v.picklist(EVENT_TYPE_PATTERNS)), v.maxLength(EVENT_TYPE_PATTERNS.length)),
      ),
      v.maxLength(
        EVENT_TYPE_PATTERNS.length,
        `The type field must not have more than ${EVENT_TYPE_PATTERNS.length} items.`,
      ),
      v.transform((values) => values.map((t) => t.trim()).filter((t) => t !== '')),
      v.check(
        (values) => values.every((t) => EVENT_TYPE_PATTERNS.includes(t)),
        `The selected type is invalid: each must be one of ${EVENT_TYPE_PATTERNS.join(', ')}.`,
      ),
    ),
  ),
});

export interface EventFeedQuery {
  after?: string | undefined;
  limit: number;
  types: string[];
}

export function parseEventFeedQuery(query: Record<string, string[]>): EventFeedQuery {
  const q = parseInput(EventFeedQueryParams, query);
  return { after: q.after, limit: q.limit ?? DEFAULT_EVENT_LIMIT, types: q.type ?? [] };
}

/** Whether an event type is one `patterns` asks for (none: every type). */
export function typeMatcher(patterns: string[]): (type: string) => boolean {
  if (patterns.length === 0) return () => true;
  return (type) => matchesEventType(patterns, type);
}

/**
 * The `listEvents` route (decisions.md, "Events"): the account's events after `after`, oldest first. `limit` bounds
 * the events examined, so a page filtered by type may hold fewer (even none) and still have a `next_cursor`;
 * `next_cursor` is null when nothing after `after` is in the feed yet (poll again with the same `after`).
 */
export async function listEvents(
  accountId: string,
  query: EventFeedQuery,
): Promise<{ data: EventRecord[]; next_cursor: string | null }> {
  try {
    const page = await readFeed(accountId, {
      after: query.after,
      limit: query.limit,
      matches: typeMatcher(query.types),
    });
    return { data: page.events, next_cursor: page.last ?? null };
  } catch (error) {
    if (error instanceof UnknownEventCursor) {
      throw ValidationFailed.field(
        'after',
        'The after field names no event of this account (or one past 30 days).',
      );
    }
    throw error;
  }
}

/** The `getEvent` route: one event; unknown, expired and other accounts' events are 404. */
export async function showEvent(accountId: string, id: string): Promise<EventRecord> {
  const event = isEventId(id) ? await getEvent(accountId, id) : undefined;
  if (!event) throw new NotFound();
  return event;
}
