import { describe, expect, it } from 'vitest';
import { AccountFileInvalid, parseAccountFile } from '#lib/accounts/account-file.ts';
import { checkAccountFile } from '#lib/accounts/check-account-file.ts';
import { mergeAccount, newIdCounts } from '#lib/accounts/merge-account.ts';
import { matchesEventType } from '#lib/events/types.ts';

/** Account files' service-level policies: one to three targets (decisions.md, "Reply-based service levels"). */
const problemsOf = (policies: unknown[]) => {
  try {
    const file = parseAccountFile({ slug: 'a-b', name: 'A', plan: 'pro', sla_policies: policies });
    checkAccountFile(file, undefined);
    return [];
  } catch (error) {
    if (!(error instanceof AccountFileInvalid)) throw error;
    return error.problems.map((p) => `${p.path}: ${p.rule}`);
  }
};

describe('service-level policies in account files', () => {
  it('take one to three targets; a file of earlier releases (resolution only) stays valid', () => {
    expect(problemsOf([{ name: 'Old', resolution_minutes: 60 }])).toEqual([]);
    expect(problemsOf([{ name: 'Reply', first_reply_minutes: 15 }])).toEqual([]);
    expect(
      problemsOf([{ name: 'All', first_reply_minutes: 15, next_reply_minutes: 30, resolution_minutes: 480 }]),
    ).toEqual([]);
  });

  it('refuse a policy with no target, and a target that is not a whole number of minutes in range', () => {
    expect(problemsOf([{ name: 'None' }])).toEqual([
      'sla_policies[0]: needs at least one of first_reply_minutes, next_reply_minutes, resolution_minutes',
    ]);
    expect(problemsOf([{ name: 'Half', first_reply_minutes: 1.5 }])).toEqual([
      'sla_policies[0].first_reply_minutes: must be a whole number of minutes',
    ]);
    expect(problemsOf([{ name: 'Zero', next_reply_minutes: 0 }])).toEqual([
      'sla_policies[0].next_reply_minutes: must be at least 1',
    ]);
  });

  it('keep an absent target as null, and the resolution one as before', () => {
    const file = parseAccountFile({
      slug: 'a-b',
      name: 'A',
      plan: 'pro',
      sla_policies: [
        { name: 'Old', priority: 'urgent', resolution_minutes: 240 },
        { name: 'Reply', first_reply_minutes: 5 },
      ],
    });
    checkAccountFile(file, undefined);
    const firstIds = Object.fromEntries(Object.keys(newIdCounts(file, undefined, [])).map((s) => [s, 1]));
    const { config } = mergeAccount(file, undefined, [], {
      accountId: 'acc-1',
      firstIds,
      timestamp: '2026-11-27T00:00:00.000000Z',
      newUuid: () => 'uuid-1',
    });
    expect(
      config.account.slaPolicies.map((p) => [p.firstReplyMinutes, p.nextReplyMinutes, p.resolutionMinutes]),
    ).toEqual([
      [null, null, 240],
      [5, null, null],
    ]);
  });

  it('ticket.sla_breached is an event type webhooks and the feed can ask for', () => {
    expect(matchesEventType(['ticket.sla_breached'], 'ticket.sla_breached')).toBe(true);
    expect(matchesEventType(['ticket.*'], 'ticket.sla_breached')).toBe(true);
    expect(matchesEventType(['ticket.updated'], 'ticket.sla_breached')).toBe(false);
  });
});
