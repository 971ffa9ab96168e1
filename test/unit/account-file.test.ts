import { describe, expect, it } from 'vitest';
import { AccountFileInvalid, parseAccountFile } from '#lib/accounts/account-file.ts';

const problemsOf = (raw: unknown) => {
  try {
    parseAccountFile(raw);
    return [];
  } catch (error) {
    if (!(error instanceof AccountFileInvalid)) throw error;
    return error.problems.map((p) => `${p.path}: ${p.rule}`);
  }
};

describe('account file validation', () => {
  const base = { slug: 'a-b', name: 'A', plan: 'pro' };

  it('needs only slug, name and plan', () => {
    expect(problemsOf(base)).toEqual([]);
    expect(problemsOf({})).toEqual(
      expect.arrayContaining([expect.stringMatching(/^slug: /), expect.stringMatching(/^name: /)]),
    );
  });

  it.each([
    [{ plan: 'gold' }, 'plan: must be one of startup, pro, enterprise'],
    [{ ticket_prefix: 'T' }, 'ticket_prefix: must be 2 to 10 capital letters'],
    [{ ticket_prefix: 'abc' }, 'ticket_prefix: must be 2 to 10 capital letters'],
    [{ pipelines: [{ name: 'P', stages: [] }] }, 'pipelines[0].stages: must have at least one stage'],
    [
      { pipelines: [{ name: 'P', stages: [{ name: 'S', color: 'red', probability: 5 }] }] },
      'pipelines[0].stages[0].color: must be a hex colour #RRGGBB',
    ],
    [
      { business_hours: { time_zone: 'Mars/Olympus', weekly: {} } },
      'business_hours.time_zone: must be an IANA time zone',
    ],
    [
      { business_hours: { time_zone: 'UTC', weekly: { mon: [['17:00', '09:00']] } } },
      'business_hours.weekly.mon[0]: must open before it closes',
    ],
    [
      { business_hours: { time_zone: 'UTC', weekly: {}, holidays: ['2026-02-30'] } },
      'business_hours.holidays[0]: must be a real calendar date YYYY-MM-DD',
    ],
    [
      { sla_policies: [{ name: 'x', resolution_minutes: 0 }] },
      'sla_policies[0].resolution_minutes: must be at least 1',
    ],
    [{ pipline: [] }, 'pipline: is not a known field'],
  ])('rejects %j with its path and rule', (patch, expected) => {
    expect(problemsOf({ ...base, ...patch })).toContain(expected);
  });
});
