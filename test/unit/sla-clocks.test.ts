import { describe, expect, it } from 'vitest';
import type { BusinessHours } from '#lib/accounts/types.ts';
import { breachesDue, isBreached, nextDueUs, withBreaches } from '#lib/tickets/owed-breaches.ts';
import { presentSla, type SlaFields, type SlaTargets } from '#lib/tickets/sla-clocks.ts';

const us = (iso: string) => Date.parse(iso) * 1000;
const ts = (iso: string) => new Date(iso).toISOString().replace('Z', '000Z');
const MIN = 60_000_000;

const targets: SlaTargets = {
  policy: 'Standard',
  firstReplyMinutes: 60,
  nextReplyMinutes: 30,
  resolutionMinutes: 480,
  calendar: null,
};
const created = '2026-03-16T10:00:00Z';
const ticket = (fields: Partial<SlaFields> = {}): SlaFields => ({
  createdAt: ts(created),
  dueAt: ts('2026-03-16T18:00:00Z'),
  resolvedAt: null,
  closedAt: null,
  slaTargets: targets,
  ...fields,
});

describe('service-level clocks', () => {
  it('a new ticket: first reply and resolution running from created_at, next reply null, nothing breached', () => {
    const sla = presentSla(ticket(), us(created) + MIN);
    expect(sla).toEqual({
      policy: 'Standard',
      first_reply: { due_at: ts('2026-03-16T11:00:00Z'), completed_at: null, breached_at: null },
      next_reply: null,
      resolution: { due_at: ts('2026-03-16T18:00:00Z'), completed_at: null, breached_at: null },
    });
    expect(nextDueUs(ticket())).toBe(us('2026-03-16T11:00:00Z'));
  });

  it('breached_at is the due time, never the time noticed; a clock completed at its due time is in time', () => {
    const late = presentSla(ticket(), us('2026-03-16T13:17:00Z'));
    expect(late.first_reply?.breached_at).toBe(ts('2026-03-16T11:00:00Z'));
    const atDue = presentSla(ticket(), us('2026-03-16T11:00:00Z'));
    expect(atDue.first_reply?.breached_at).toBeNull();
    const inTime = presentSla(
      ticket({ firstReplyAt: ts('2026-03-16T11:00:00Z') }),
      us('2026-03-17T00:00:00Z'),
    );
    expect(inTime.first_reply).toEqual({
      due_at: ts('2026-03-16T11:00:00Z'),
      completed_at: ts('2026-03-16T11:00:00Z'),
      breached_at: null,
    });
    const repliedLate = presentSla(
      ticket({ firstReplyAt: ts('2026-03-16T11:00:01Z') }),
      us('2026-03-17T00:00:00Z'),
    );
    expect(repliedLate.first_reply?.breached_at).toBe(ts('2026-03-16T11:00:00Z'));
  });

  it('a clock the policy has no target for is null; a ticket stored before the clocks shows its due_at only', () => {
    const onlyResolution = ticket({
      slaTargets: { ...targets, firstReplyMinutes: null, nextReplyMinutes: null },
    });
    expect(presentSla(onlyResolution, us(created))).toMatchObject({ first_reply: null, next_reply: null });
    const legacy = ticket({ slaTargets: undefined });
    expect(presentSla(legacy, us(created))).toEqual({
      policy: null,
      first_reply: null,
      next_reply: null,
      resolution: { due_at: ts('2026-03-16T18:00:00Z'), completed_at: null, breached_at: null },
    });
    expect(presentSla(ticket({ dueAt: null, slaTargets: null }), us(created))).toEqual({
      policy: null,
      first_reply: null,
      next_reply: null,
      resolution: null,
    });
  });

  it('next reply: due from the cycle start, completed by the next agent reply; the due entry follows the soonest', () => {
    const cycle = ticket({
      firstReplyAt: ts('2026-03-16T10:10:00Z'),
      replyCycle: { startedAt: ts('2026-03-16T12:00:00Z'), completedAt: null },
    });
    expect(presentSla(cycle, us('2026-03-16T12:10:00Z')).next_reply).toEqual({
      due_at: ts('2026-03-16T12:30:00Z'),
      completed_at: null,
      breached_at: null,
    });
    expect(nextDueUs(cycle)).toBe(us('2026-03-16T12:30:00Z'));
    const answered = {
      ...cycle,
      replyCycle: { startedAt: ts('2026-03-16T12:00:00Z'), completedAt: ts('2026-03-16T12:20:00Z') },
    };
    expect(nextDueUs(answered)).toBe(us('2026-03-16T18:00:00Z'));
  });

  it('the runner writes each breach once: recorded, it leaves the due entry and puts the ticket in sla=breached until completed', () => {
    const t = ticket();
    expect(breachesDue(t, us('2026-03-16T11:00:00Z'))).toEqual([]);
    const due = breachesDue(t, us('2026-03-16T11:00:30Z'));
    expect(due.map((c) => c.metric)).toEqual(['first_reply']);
    const breached = withBreaches(t, due);
    expect(breached.slaBreaches).toEqual({
      first_reply: { startedAt: ts(created), dueAt: ts('2026-03-16T11:00:00Z') },
    });
    expect(breachesDue(breached, us('2026-03-16T11:05:00Z'))).toEqual([]);
    expect(isBreached(breached)).toBe(true);
    expect(nextDueUs(breached)).toBe(us('2026-03-16T18:00:00Z'));
    const replied = { ...breached, firstReplyAt: ts('2026-03-16T11:30:00Z') };
    expect(isBreached(replied)).toBe(false);
    expect(presentSla(replied, us('2026-03-16T12:00:00Z')).first_reply?.breached_at).toBe(
      ts('2026-03-16T11:00:00Z'),
    );
  });

  it('a reopen clears resolution completed_at: the same due time runs again, its breach not written twice', () => {
    const breached = withBreaches(
      ticket(),
      breachesDue(ticket({ firstReplyAt: ts(created) }), us('2026-03-16T18:01:00Z')),
    );
    expect(breached.slaBreaches?.resolution).toBeDefined();
    const resolved = { ...breached, resolvedAt: ts('2026-03-16T19:00:00Z') };
    expect(isBreached(resolved)).toBe(false);
    const reopened = { ...resolved, resolvedAt: null };
    expect(presentSla(reopened, us('2026-03-16T20:00:00Z')).resolution).toEqual({
      due_at: ts('2026-03-16T18:00:00Z'),
      completed_at: null,
      breached_at: ts('2026-03-16T18:00:00Z'),
    });
    expect(breachesDue(reopened, us('2026-03-16T20:00:00Z')).map((c) => c.metric)).toEqual(['first_reply']);
    expect(isBreached(reopened)).toBe(true);
  });

  it('new targets (a priority change) move every due time from its own start; a breach of the old due time is not the new one', () => {
    const t = withBreaches(ticket(), breachesDue(ticket(), us('2026-03-16T11:01:00Z')));
    const moved = { ...t, slaTargets: { ...targets, firstReplyMinutes: 240 } };
    expect(presentSla(moved, us('2026-03-16T11:02:00Z')).first_reply).toEqual({
      due_at: ts('2026-03-16T14:00:00Z'),
      completed_at: null,
      breached_at: null,
    });
    expect(isBreached(moved)).toBe(false);
    expect(nextDueUs(moved)).toBe(us('2026-03-16T14:00:00Z'));
  });

  it('business hours: every target counts opening hours of the calendar the ticket keeps', () => {
    const calendar: BusinessHours = {
      timeZone: 'UTC',
      weekly: { mon: [['09:00', '17:00']], tue: [['09:00', '17:00']] },
      holidays: [],
    };
    const t = ticket({
      createdAt: ts('2026-03-16T16:30:00Z'),
      slaTargets: { ...targets, calendar },
      firstReplyAt: ts('2026-03-16T16:40:00Z'),
      replyCycle: { startedAt: ts('2026-03-16T16:50:00Z'), completedAt: null },
    });
    const sla = presentSla(t, us('2026-03-16T17:00:00Z'));
    expect(sla.first_reply?.due_at).toBe(ts('2026-03-17T09:30:00Z'));
    expect(sla.next_reply?.due_at).toBe(ts('2026-03-17T09:20:00Z'));
  });
});
