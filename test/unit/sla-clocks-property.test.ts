import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AccountConfig, Priority } from '#lib/accounts/types.ts';
import { applyChange } from '#lib/tickets/apply-change.ts';
import { withLostBreaches } from '#lib/tickets/breaches.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import { ticketAfter } from '#lib/tickets/messages/ticket-after.ts';
import { breachesDue, isBreached, nextDueUs, withBreaches } from '#lib/tickets/owed-breaches.ts';
import { serviceLevelOf } from '#lib/tickets/sla.ts';
import { type ClockState, presentSla } from '#lib/tickets/sla-clocks.ts';
import type { Ticket, TicketStatus } from '#lib/tickets/types.ts';
import { formatTimestamp, parseTimestamp } from '#lib/time.ts';

/**
 * Model-based property test of the service-level clocks (decisions.md, "Reply-based service levels"): random
 * sequences of requester messages, agent public replies, internal notes, status changes, priority changes, time
 * passing and breach-runner passes, run through the implementation (the stored fields, as the message writes and
 * PATCH keep them; the clocks, the due entry, the sla=breached dimension and the runner's decisions derived from
 * them) and through a model that knows nothing of the stored fields: it keeps the conversation as a log and reads
 * every clock off the log with the contract's words. They must agree after every step.
 */

// ---- The policy of the account: per priority, first reply / next reply / resolution targets, in minutes. ----
const TARGETS: Record<Priority, [number | null, number | null, number | null]> = {
  low: [240, 480, 2880],
  medium: [60, 120, 1440],
  high: [30, 60, null],
  urgent: [10, null, 120],
};
const PRIORITIES = Object.keys(TARGETS) as Priority[];
const config = {
  account: {
    businessHours: null,
    slaPolicies: PRIORITIES.map((priority) => ({
      name: `P-${priority}`,
      priority,
      category: null,
      firstReplyMinutes: TARGETS[priority][0],
      nextReplyMinutes: TARGETS[priority][1],
      resolutionMinutes: TARGETS[priority][2],
      businessHours: false,
    })),
  },
} as unknown as AccountConfig;

const MIN = 60_000_000;
const START = Date.parse('2026-06-01T08:00:00Z') * 1000;

type Step =
  | { kind: 'requester' }
  | { kind: 'agent' }
  | { kind: 'note' }
  | { kind: 'status'; status: Exclude<TicketStatus, 'closed'> }
  | { kind: 'priority'; priority: Priority }
  | { kind: 'wait'; micros: number }
  | { kind: 'toDue'; offset: -1 | 0 | 1 }
  | { kind: 'runner' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant({ kind: 'requester' as const }),
  fc.constant({ kind: 'agent' as const }),
  fc.constant({ kind: 'note' as const }),
  fc.record({
    kind: fc.constant('status' as const),
    status: fc.constantFrom('open', 'pending', 'in_progress', 'resolved'),
  }),
  fc.record({ kind: fc.constant('priority' as const), priority: fc.constantFrom(...PRIORITIES) }),
  // Up to 3 hours, sometimes exactly a minute boundary (due times are whole minutes after a start).
  fc.record({
    kind: fc.constant('wait' as const),
    micros: fc.oneof(
      fc.integer({ min: 1, max: 180 * MIN }),
      fc.integer({ min: 1, max: 180 }).map((m) => m * MIN),
    ),
  }),
  // To the model's next due time, a microsecond before, at, or after it: the edges of every clock.
  fc.record({
    kind: fc.constant('toDue' as const),
    offset: fc.constantFrom(-1 as const, 0 as const, 1 as const),
  }),
  fc.constant({ kind: 'runner' as const }),
);

// ---- A message's effect on the ticket: the service's own (lib/tickets/messages/ticket-after.ts, ticketAfter: the status
// rules and the conversation's reducer), as POST /api/tickets/{t}/messages commits it. ----
let messageNumber = 1;
function applyMessage(
  t: Ticket,
  author: 'agent' | 'requester',
  visibility: 'public' | 'internal',
  atUs: number,
): Ticket {
  messageNumber += 1;
  const message: Message = {
    id: `msg_${String(messageNumber).padStart(10, '0')}${'0'.repeat(16)}`,
    number: messageNumber,
    ticketUuid: t.uuid,
    author: { type: author, agentId: null, name: null, email: null },
    visibility,
    channel: 'api',
    body: 'b',
    createdAt: formatTimestamp(atUs),
  };
  return ticketAfter(t, message, undefined, config, atUs);
}

// ---- The model: the conversation and changes as a log; every clock read off it. ----
interface LogEntry {
  at: number;
  what: 'requester' | 'agent' | 'note' | 'status' | 'priority';
  status?: TicketStatus;
  priority?: Priority;
}
interface ModelClock {
  metric: 'first_reply' | 'next_reply' | 'resolution';
  start: number;
  due: number;
  completed: number | null;
}

class Model {
  log: LogEntry[] = [];
  written = new Set<string>();
  constructor(
    readonly created: number,
    readonly firstPriority: Priority,
  ) {}

  priority(): Priority {
    return this.log.filter((e) => e.what === 'priority').at(-1)?.priority ?? this.firstPriority;
  }

  /** The status as the log leaves it: the last status change, or `open` after a requester's reopening message. */
  status(): TicketStatus {
    let status: TicketStatus = 'open';
    for (const e of this.log) {
      if (e.what === 'status' && e.status) status = e.status;
      if (e.what === 'requester' && (status === 'pending' || status === 'resolved')) status = 'open';
    }
    return status;
  }

  /**
   * The priority whose targets a clock's due time counts with: the last change (to another priority) that came
   * while the clock was not completed (a completed clock is history: a change after its completion leaves it),
   * else the first priority. `runningAt(i)`: whether the clock was not completed when the log's entry i came.
   */
  targetsOf(runningAt: (i: number) => boolean) {
    let current = this.firstPriority;
    let counted = this.firstPriority;
    this.log.forEach((e, i) => {
      if (e.what !== 'priority' || !e.priority || e.priority === current) return;
      current = e.priority;
      if (runningAt(i)) counted = e.priority;
    });
    return TARGETS[counted];
  }

  clocks(): ModelClock[] {
    const out: ModelClock[] = [];
    // First reply: due from the creation, completed by the first public agent message.
    const firstAgent = this.log.findIndex((e) => e.what === 'agent');
    const firstReply = this.log[firstAgent]?.at ?? null;
    const [first] = this.targetsOf((i) => firstAgent < 0 || i < firstAgent);
    if (first !== null)
      out.push({
        metric: 'first_reply',
        start: this.created,
        due: this.created + first * MIN,
        completed: firstReply,
      });
    // Next reply: a cycle starts at a requester's message after the first reply when the requester was not
    // waiting (the agent had answered last); the next public agent message completes it. The last cycle shows.
    let waiting = true; // a new ticket: the requester waits from creation
    let cycle: { start: number; completed: number | null; completedIndex: number } | null = null;
    this.log.forEach((e, i) => {
      if (e.what === 'agent') {
        waiting = false;
        if (cycle && cycle.completed === null) Object.assign(cycle, { completed: e.at, completedIndex: i });
      }
      if (e.what === 'requester') {
        if (!waiting && firstReply !== null && e.at >= firstReply) {
          cycle = { start: e.at, completed: null, completedIndex: Number.POSITIVE_INFINITY };
        }
        waiting = true;
      }
    });
    const shown = cycle as { start: number; completed: number | null; completedIndex: number } | null;
    const [, next] = this.targetsOf((i) => shown === null || i < shown.completedIndex);
    if (next !== null && shown)
      out.push({
        metric: 'next_reply',
        start: shown.start,
        due: shown.start + next * MIN,
        completed: shown.completed,
      });
    // Resolution: completed when the ticket is resolved (the time it entered resolved last), open again on a reopen.
    let resolvedAt: number | null = null;
    let status: TicketStatus = 'open';
    const resolvedWhen: (number | null)[] = [];
    for (const e of this.log) {
      if (e.what === 'status' && e.status && e.status !== status) {
        resolvedAt = e.status === 'resolved' ? e.at : null;
        status = e.status;
      }
      if (e.what === 'requester' && (status === 'pending' || status === 'resolved')) {
        status = 'open';
        resolvedAt = null;
      }
      resolvedWhen.push(resolvedAt);
    }
    const [, , resolution] = this.targetsOf((i) => resolvedWhen[i] === null);
    if (resolution !== null) {
      out.push({
        metric: 'resolution',
        start: this.created,
        due: this.created + resolution * MIN,
        completed: resolvedAt,
      });
    }
    return out;
  }

  key = (c: ModelClock) => `${c.metric}|${c.start}|${c.due}`;
  /** Every clock (metric, cycle, due time) seen late at a step: each is owed exactly one breach. */
  everLate = new Set<string>();

  /** The clocks late at `now`: not completed by their due time (running past it, or completed after it). */
  late(now: number): ModelClock[] {
    return this.clocks().filter((c) => (c.completed === null ? now > c.due : c.completed > c.due));
  }

  /** Before a step at `now`: what is late by then is owed (lateness only grows while nothing changes). */
  observe(now: number): void {
    for (const c of this.late(now)) this.everLate.add(this.key(c));
  }

  /** The runner at `now`: every late clock whose breach is not written yet. */
  runner(now: number): string[] {
    const due = this.late(now).filter((c) => !this.written.has(this.key(c)));
    for (const c of due) this.written.add(this.key(c));
    return due.map((c) => `${c.metric}@${formatTimestamp(c.due)}`).sort();
  }

  /**
   * A change logged at `now`: a late clock whose breach is not written and that the change replaces (it is no
   * longer the ticket's clock of its metric: a new next-reply cycle, a new due time) would never be found by a
   * runner again: the change writes it.
   */
  change(entry: LogEntry, now: number): string[] {
    const pending = this.late(now).filter((c) => !this.written.has(this.key(c)));
    this.log.push(entry);
    const current = new Set(this.clocks().map(this.key));
    const replaced = pending.filter((c) => !current.has(this.key(c)));
    for (const c of replaced) this.written.add(this.key(c));
    return replaced.map((c) => `${c.metric}@${formatTimestamp(c.due)}`).sort();
  }

  sla(now: number) {
    const show = (metric: ModelClock['metric']) => {
      const c = this.clocks().find((x) => x.metric === metric);
      if (!c) return null;
      const late = c.completed === null ? now > c.due : c.completed > c.due;
      return {
        due_at: formatTimestamp(c.due),
        completed_at: c.completed === null ? null : formatTimestamp(c.completed),
        breached_at: late ? formatTimestamp(c.due) : null,
      };
    };
    return {
      policy: `P-${this.priority()}`,
      first_reply: show('first_reply'),
      next_reply: show('next_reply'),
      resolution: show('resolution'),
    };
  }

  inBreachedFilter(): boolean {
    return this.clocks().some((c) => c.completed === null && this.written.has(this.key(c)));
  }

  nextDue(): number | undefined {
    const open = this.clocks().filter(
      (c) => (c.completed === null || c.completed > c.due) && !this.written.has(this.key(c)),
    );
    return open.length ? Math.min(...open.map((c) => c.due)) : undefined;
  }
}

/** A clock written by the implementation, in the model's key (metric, cycle start and due time in µs). */
const keyOf = (c: ClockState) => `${c.metric}|${parseTimestamp(c.startedAt)}|${c.dueUs}`;

function newTicket(priority: Priority): Ticket {
  const created = formatTimestamp(START);
  return {
    uuid: '00000000-0000-7000-8000-000000000001',
    number: 1,
    reference: 'TKT-000001',
    subject: 's',
    description: 'd',
    status: 'open',
    priority,
    category: null,
    channel: 'api',
    requester: {
      type: 'email',
      name: null,
      email: 'r@example.com',
      phone: null,
      contactId: null,
      clientId: null,
    },
    assignee: null,
    team: null,
    parentUuid: null,
    customFields: {},
    tags: [],
    createdAt: created,
    updatedAt: created,
    resolvedAt: null,
    closedAt: null,
    ...serviceLevelOf(config.account, { priority, categorySlug: null, createdUs: START }),
  };
}

describe('service-level clocks against a model (property)', () => {
  it('agree after every step of random conversations, status and priority changes and runner passes', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PRIORITIES),
        fc.array(step, { minLength: 1, maxLength: 40 }),
        (priority, steps) => {
          let now = START;
          let ticket = newTicket(priority);
          const model = new Model(START, priority);
          /** Every breach the implementation wrote (runner passes and changes): each once. */
          const writes: string[] = [];
          /** A change through the service's own functions, with the breaches it would lose written. */
          const change = (entry: LogEntry, changed: (t: Ticket) => Ticket) => {
            model.observe(now);
            const settled = withLostBreaches(ticket, changed(ticket), now);
            ticket = settled.ticket;
            const written = settled.clocks.map((c) => `${c.metric}@${formatTimestamp(c.dueUs)}`).sort();
            writes.push(...settled.clocks.map(keyOf));
            expect(written).toEqual(model.change(entry, now));
          };
          for (const s of steps) {
            switch (s.kind) {
              case 'wait':
                now += s.micros;
                break;
              case 'toDue': {
                const due = model.nextDue();
                if (due !== undefined && due + s.offset > now) now = due + s.offset;
                break;
              }
              case 'requester':
                now += 1;
                change({ at: now, what: 'requester' }, (t) => applyMessage(t, 'requester', 'public', now));
                break;
              case 'agent':
                now += 1;
                change({ at: now, what: 'agent' }, (t) => applyMessage(t, 'agent', 'public', now));
                break;
              case 'note':
                now += 1;
                change({ at: now, what: 'note' }, (t) => applyMessage(t, 'agent', 'internal', now));
                break;
              case 'status':
                now += 1;
                change({ at: now, what: 'status', status: s.status }, (t) =>
                  applyChange(t, { status: s.status }, {}, config, now),
                );
                break;
              case 'priority':
                now += 1;
                change({ at: now, what: 'priority', priority: s.priority }, (t) =>
                  applyChange(t, { priority: s.priority }, {}, config, now),
                );
                break;
              case 'runner': {
                model.observe(now);
                const due = breachesDue(ticket, now);
                ticket = withBreaches(ticket, due);
                writes.push(...due.map(keyOf));
                const written = due.map((c) => `${c.metric}@${formatTimestamp(c.dueUs)}`).sort();
                expect(written).toEqual(model.runner(now));
                // After a pass, every clock ever late has its breach: none lost between passes.
                expect([...model.written].sort()).toEqual([...model.everLate].sort());
                break;
              }
            }
            // Exactly once per clock cycle and due time, whoever wrote it.
            expect(new Set(writes).size).toBe(writes.length);
            expect(new Set(writes)).toEqual(model.written);
            expect(ticket.status).toBe(model.status());
            expect(presentSla(ticket, now)).toEqual(model.sla(now));
            expect(isBreached(ticket)).toBe(model.inBreachedFilter());
            expect(nextDueUs(ticket)).toBe(model.nextDue());
            // The due entry is never behind a breach to write: a runner at the entry's time finds what is due.
            const entry = nextDueUs(ticket);
            for (const c of breachesDue(ticket, now)) expect(entry).toBeLessThanOrEqual(c.dueUs);
            expect(parseTimestamp(ticket.createdAt)).toBe(START);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
