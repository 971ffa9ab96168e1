import { describe, expect, it } from 'vitest';
import type { BusinessHours, SlaPolicy } from '#lib/accounts/types.ts';
import { addBusinessMinutes } from '#lib/tickets/business-hours.ts';
import { matchPolicy } from '#lib/tickets/sla.ts';

const paris: BusinessHours = {
  timeZone: 'Europe/Paris',
  weekly: {
    mon: [['09:00', '17:00']],
    tue: [['09:00', '17:00']],
    wed: [['09:00', '17:00']],
    thu: [['09:00', '17:00']],
    fri: [['09:00', '17:00']],
  },
  holidays: [],
};
const us = (iso: string) => Date.parse(iso) * 1000;
const iso = (micros: number) => new Date(micros / 1000).toISOString();

describe('business hours', () => {
  it('Friday 16:30 + 60 business minutes in a 09:00-17:00 calendar is Monday 09:30 local', () => {
    // 2026-03-13 is a Friday; Paris is UTC+1 then.
    expect(iso(addBusinessMinutes(us('2026-03-13T15:30:00Z'), 60, paris))).toBe('2026-03-16T08:30:00.000Z');
  });

  it('counts across a daylight-saving change (Paris leaves summer time on 2026-10-25)', () => {
    // Friday 2026-10-23 16:30 CEST (UTC+2) → Monday 2026-10-26 09:30 CET (UTC+1).
    expect(iso(addBusinessMinutes(us('2026-10-23T14:30:00Z'), 60, paris))).toBe('2026-10-26T08:30:00.000Z');
    // Friday 2026-03-27 16:30 CET (UTC+1) → Monday 2026-03-30 09:30 CEST (UTC+2).
    expect(iso(addBusinessMinutes(us('2026-03-27T15:30:00Z'), 60, paris))).toBe('2026-03-30T07:30:00.000Z');
  });

  it('skips holidays and closed days, and uses split intervals', () => {
    const calendar: BusinessHours = {
      timeZone: 'UTC',
      weekly: {
        tue: [
          ['09:00', '12:00'],
          ['13:00', '17:00'],
        ],
        wed: [['09:00', '17:00']],
      },
      holidays: ['2026-12-23'],
    };
    // Tuesday 2026-12-22 11:30 + 90 min: 30 before lunch, 60 after → 14:00.
    expect(iso(addBusinessMinutes(us('2026-12-22T11:30:00Z'), 90, calendar))).toBe(
      '2026-12-22T14:00:00.000Z',
    );
    // Tuesday 16:00 + 120 min: 60 on Tuesday, Wednesday 23rd is a holiday, next opening Tuesday 29th 09:00.
    expect(iso(addBusinessMinutes(us('2026-12-22T16:00:00Z'), 120, calendar))).toBe(
      '2026-12-29T10:00:00.000Z',
    );
  });

  it('starts at opening time when created before it, keeping microseconds otherwise', () => {
    expect(iso(addBusinessMinutes(us('2026-03-16T05:00:00Z'), 30, paris))).toBe('2026-03-16T08:30:00.000Z');
    expect(addBusinessMinutes(us('2026-03-16T10:00:00Z') + 123, 1, paris)).toBe(
      us('2026-03-16T10:01:00Z') + 123,
    );
  });
});

describe('policy matching', () => {
  const policy = (name: string, priority: SlaPolicy['priority'], category: string | null): SlaPolicy => ({
    name,
    priority,
    category,
    firstReplyMinutes: null,
    nextReplyMinutes: null,
    resolutionMinutes: 60,
    businessHours: false,
  });
  const policies = [
    policy('any urgent', 'urgent', null),
    policy('billing', null, 'billing'),
    policy('urgent billing', 'urgent', 'billing'),
    policy('urgent again', 'urgent', null),
  ];

  it('prefers more conditions, then the earlier policy', () => {
    expect(matchPolicy(policies, { priority: 'urgent', categorySlug: 'billing' })?.name).toBe(
      'urgent billing',
    );
    expect(matchPolicy(policies, { priority: 'urgent', categorySlug: null })?.name).toBe('any urgent');
    expect(matchPolicy(policies, { priority: 'low', categorySlug: 'billing' })?.name).toBe('billing');
    expect(matchPolicy(policies, { priority: 'low', categorySlug: 'bug' })).toBeUndefined();
  });
});
