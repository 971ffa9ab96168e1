import type { BusinessHours } from '#lib/accounts/types.ts';
import type { EventRecord } from '#lib/data/events.ts';
import type { CustomFieldValue } from '#lib/tickets/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import { firstFailure } from './conditions.ts';
import type { ChangeFacts, RuleSubject } from './fields.ts';
import { momentAfter } from './time-rules.ts';
import type { Rule, TimeSince } from './types.ts';

/**
 * What a rule would have done over the changes the events feed shows (a backtest: docs/rules.md, "Backtest"). Pure:
 * the events in (a part of a window, in place order), what the rule's kind counts out. A change is its events
 * committed together: one ticket's events of one commit share their ticket and their time (one take of places),
 * and the first of them says what the change was (the change's own events come before its rules' messages): a
 * `ticket.created` a create, a `message.created` a message, a `ticket.updated` an update (a PATCH, a macro, a time
 * change). The conditions are looked at by the evaluator's own function on the ticket as the change's event shows it.
 */

/** A ticket as its events show it (the fields a backtest reads: its conditions' and a time rule's `since`). */
interface ShownTicket {
  uuid: string;
  status: RuleSubject['status'];
  priority: RuleSubject['priority'];
  channel: RuleSubject['channel'];
  category: { slug: string } | null;
  team: { id: number } | null;
  assignee: { id: number } | null;
  organization?: { id: number } | null;
  tags: string[];
  subject: string;
  description: string;
  requester: { email: string | null; erased?: boolean };
  custom_fields: Record<string, CustomFieldValue>;
  created_at: string;
  updated_at: string;
  waiting_since: string | null;
  last_message_at: string | null;
  status_changed_at: string;
}

interface ShownMessage {
  ticket_uuid: string;
  author: { type: 'agent' | 'requester' | 'system' };
  visibility: 'public' | 'internal';
  channel: string;
  body: string;
}

type ChangeKind = 'create' | 'update' | 'message';

/** One change to one ticket, as the feed shows it. */
export interface ShownChange {
  kind: ChangeKind;
  ticket: string;
  /** Epoch ms of the change. */
  at: number;
  /** The ticket after the change (and its rules). */
  after: ShownTicket;
  /** The changed fields' values before it (an update's and a message's). */
  previous: Record<string, unknown>;
  message?: ShownMessage;
}

const KINDS: Record<string, ChangeKind> = {
  'ticket.created': 'create',
  'ticket.updated': 'update',
  'message.created': 'message',
};

/** The event types a backtest reads. */
export const BACKTEST_EVENT_TYPES = Object.keys(KINDS);

/** The changes the events make, in time order (events of other types are passed). */
export function changesOf(events: readonly EventRecord[]): ShownChange[] {
  const changes = new Map<string, Omit<ShownChange, 'after'> & { after?: ShownTicket }>();
  for (const event of events) {
    const kind = KINDS[event.type];
    if (!kind) continue;
    const object = event.data.object as ShownTicket & ShownMessage;
    const ticket = kind === 'message' ? object.ticket_uuid : object.uuid;
    const key = `${ticket} ${event.created_at}`;
    const change = changes.get(key) ?? {
      kind,
      ticket,
      at: Date.parse(event.created_at),
      previous: {},
      ...(kind === 'message' ? { message: object } : {}),
    };
    changes.set(key, change);
    // The change's ticket: its create's, else its (last) ticket.updated's with what that changed.
    if (kind === 'create' || (kind === 'update' && change.kind !== 'create')) {
      change.after = object;
      change.previous = event.data.previous ?? {};
    }
  }
  // A message change whose ticket.updated the part did not hold is left out (its ticket is not known).
  // In time order (the feed's place order is each ticket's commit order, not the account's across tickets).
  return [...changes.values()]
    .flatMap((c) => (c.after ? [{ ...c, after: c.after }] : []))
    .sort((a, b) => a.at - b.at);
}

/** The ticket as a condition reads it. */
function subjectOf(t: ShownTicket): RuleSubject {
  return {
    status: t.status,
    priority: t.priority,
    channel: t.channel,
    category: t.category,
    team: t.team,
    assignee: t.assignee,
    organization: t.organization ?? null,
    tags: t.tags,
    subject: t.subject,
    description: t.description,
    requester: { email: t.requester.email ?? '', erased: t.requester.erased ?? t.requester.email === null },
    customFields: t.custom_fields,
  };
}

/** How a change came, as far as the feed tells: a mail's message or create by e-mail, else the API. */
function factsOf(change: ShownChange): ChangeFacts {
  const { message } = change;
  const mailed = message ? message.channel === 'email' : change.after.channel === 'email';
  return {
    via: change.kind === 'update' ? 'api' : mailed ? 'email' : 'api',
    ...(message
      ? { message: { author: message.author.type, visibility: message.visibility, body: message.body } }
      : {}),
  };
}

export interface Backtested {
  /** The changes of the rule's kind looked at (for a time rule, every ticket change). */
  changes: number;
  /** Where it would have fired: the change's ticket, in order (a ticket once a firing). */
  fired: string[];
}

export interface BacktestWindow {
  /** Epoch ms. */
  from: number;
  /** Epoch ms: the window's end, or now when sooner (a time rule's moment to come fires nothing yet). */
  until: number;
  calendar: BusinessHours | null;
}

const RULE_KIND_CHANGE: Record<Rule['on'], ChangeKind | undefined> = {
  created: 'create',
  updated: 'update',
  message: 'message',
  time: undefined,
};

/** The changes of the rule's kind, and those where its conditions would have held. */
export function backtestChanges(
  rule: Rule,
  changes: readonly ShownChange[],
  window: BacktestWindow,
): Backtested {
  if (rule.on === 'time') return backtestTime(rule, changes, window);
  const own = changes.filter((c) => c.kind === RULE_KIND_CHANGE[rule.on]);
  const fired = own.filter((change) => {
    const now = subjectOf(change.after);
    const before = change.kind === 'create' ? null : subjectOf({ ...change.after, ...change.previous });
    return firstFailure(rule.conditions, { now, before, facts: factsOf(change) }) === null;
  });
  return { changes: own.length, fired: fired.map((c) => c.ticket) };
}

/**
 * A time rule: after each change, its moment on the ticket as the change left it (`since` plus `after_minutes`, or
 * at once when that passed), when its conditions hold then and the ticket does not change before it (in the part
 * read) and it falls in the window; once per ticket per value of `since`. A closed ticket's rules never fire.
 */
function backtestTime(rule: Rule, changes: readonly ShownChange[], window: BacktestWindow): Backtested {
  const time = rule.time;
  const fired: string[] = [];
  if (!time) return { changes: changes.length, fired };
  const byTicket = Map.groupBy(changes, (c) => c.ticket);
  for (const [ticket, own] of byTicket) {
    const cycles = new Set<string>();
    for (const [i, change] of own.entries()) {
      const since = sinceOf(change.after, time.since);
      if (change.after.status === 'closed' || since === null || cycles.has(since)) continue;
      const momentMs = momentAfter(parseTimestamp(since), time, window.calendar) / 1000;
      const fireAt = Math.max(momentMs, change.at);
      const next = own[i + 1]?.at ?? window.until;
      if (fireAt < window.from || fireAt >= Math.min(next, window.until)) continue;
      const facts: ChangeFacts = { via: 'rule' };
      if (firstFailure(rule.conditions, { now: subjectOf(change.after), before: null, facts }) !== null)
        continue;
      cycles.add(since);
      fired.push(ticket);
    }
  }
  return { changes: changes.length, fired };
}

const sinceOf = (t: ShownTicket, since: TimeSince): string | null => t[since];
