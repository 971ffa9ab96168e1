import { describe, expect, it } from 'vitest';
import type { BusinessHours } from '#lib/accounts/types.ts';
import { evaluateRules } from '#lib/rules/evaluate.ts';
import { dueTimeRules, lookedAfter, nextRuleMoment, ruleMoment } from '#lib/rules/time-rules.ts';
import { context, directory, MINUTE, rule, T0, ticket, ts } from '#test/support/rules.ts';

/** T0 is Monday 2026-03-16 10:00 UTC. */
const nineToFive: BusinessHours = {
  timeZone: 'Europe/Paris',
  weekly: { mon: [['09:00', '17:00']], tue: [['09:00', '17:00']] },
  holidays: [],
};
const none = { calendar: null, looked: {} };
const nudge = (
  fields: Record<string, unknown> = {},
  conditions: unknown[] = [{ field: 'status', op: 'is', value: 'pending' }],
) =>
  rule({
    on: 'time',
    time: { after_minutes: 2880, since: 'waiting_since', ...fields },
    conditions: { all: conditions },
    actions: [{ type: 'reply', body: 'Any news on {{ticket.reference}}?' }],
  });

describe('time rules', () => {
  it('are due at since + after_minutes, rounded up to the minute, never before', () => {
    const r = nudge();
    const waiting = ticket({ status: 'pending', waitingSince: ts(T0 + 30_500_000) });
    const moment = T0 + 2 * MINUTE * 1440 + MINUTE;
    expect(ruleMoment(waiting, r, none)).toBe(moment);
    expect(nextRuleMoment(waiting, [r], none)).toEqual({ atUs: moment, ruleIds: [r.id] });
    expect(dueTimeRules(waiting, [r], moment - 1, none)).toEqual([]);
    expect(dueTimeRules(waiting, [r], moment, none)).toEqual([r]);
  });

  it("count opening minutes in the account's calendar when asked (Paris 17:00 → next morning)", () => {
    const r = nudge({ after_minutes: 30, since: 'created_at', business_hours: true }, []);
    const late = ticket({ createdAt: ts(Date.parse('2026-03-16T15:45:00Z') * 1000) }); // 16:45 in Paris
    expect(ruleMoment(late, r, { calendar: nineToFive, looked: {} })).toBe(
      Date.parse('2026-03-17T08:15:00Z') * 1000,
    );
    // No calendar: calendar time.
    expect(ruleMoment(late, r, none)).toBe(Date.parse('2026-03-16T16:15:00Z') * 1000);
  });

  it('fire once per value of since: a cycle looked at is done, a new waiting_since is a new cycle', () => {
    const r = nudge();
    const waiting = ticket({ status: 'pending', waitingSince: ts(T0) });
    const at = T0 + 2880 * MINUTE;
    const looked = lookedAfter(waiting, dueTimeRules(waiting, [r], at, none), {});
    expect(looked).toEqual({ [String(r.id)]: ts(T0) });
    expect(nextRuleMoment(waiting, [r], { calendar: null, looked })).toBeNull();
    const again = { ...waiting, waitingSince: ts(T0 + 5000 * MINUTE) };
    expect(nextRuleMoment(again, [r], { calendar: null, looked })?.atUs).toBe(T0 + 7880 * MINUTE);
  });

  it('count only moments after the rule was made, skip rules whose conditions fail and closed tickets', () => {
    const made = nudge({}, []);
    const newer = { ...made, updatedAt: ts(T0 + 3000 * MINUTE) };
    const waiting = ticket({ status: 'pending', waitingSince: ts(T0) });
    expect(ruleMoment(waiting, newer, none)).toBeNull();
    expect(nextRuleMoment({ ...waiting, status: 'open' }, [nudge()], none)).toBeNull();
    expect(nextRuleMoment({ ...waiting, status: 'closed' }, [made], none)).toBeNull();
    expect(nextRuleMoment({ ...waiting, waitingSince: null }, [made], none)).toBeNull();
  });

  it('take the earliest moment over the rules, and every rule due then', () => {
    const a = nudge({ after_minutes: 60, since: 'created_at' }, []);
    const b = nudge({ after_minutes: 60, since: 'status_changed_at' }, []);
    const c = nudge({ after_minutes: 30, since: 'last_message_at' }, []);
    const t = ticket({ lastMessageAt: ts(T0 + 40 * MINUTE) });
    // No status_changed_at stored: updated_at stands in (late, never early).
    expect(nextRuleMoment(t, [c, b, a], none)).toEqual({ atUs: T0 + 60 * MINUTE, ruleIds: [a.id, b.id] });
  });

  it('run as a change: the due time rules, then the updated rules with via rule', () => {
    const r = nudge();
    const onRule = rule({
      on: 'updated',
      conditions: { all: [{ field: 'via', op: 'is', value: 'rule' }] },
      actions: [{ type: 'add_tags', tags: ['nudged'] }],
    });
    const waiting = ticket({ status: 'pending', waitingSince: ts(T0) });
    const at = T0 + 2880 * MINUTE;
    const result = evaluateRules({
      before: waiting,
      after: waiting,
      context: context({ kind: 'time', nowUs: at }),
      rules: [...dueTimeRules(waiting, [r], at, none), onRule],
      directory,
    });
    expect(result.fired.map((f) => f.id)).toEqual([r.id, onRule.id]);
    expect(result.messages.map((m) => m.body)).toEqual(['Any news on TKT-000001?']);
    expect(result.ticket.tags).toEqual(['nudged']);
  });
});
