import { describe, expect, it } from 'vitest';
import type { BusinessHours, SlaPolicy } from '#lib/accounts/types.ts';
import { addBusinessMinutes } from '#lib/tickets/business-hours.ts';
import { matchPolicy } from '#lib/tickets/sla.ts';
import { setClockForTests } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

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

describe('due_at through the API', () => {
  const gateway = useGateway();

  it('adds a calendar-minute target to created_at, and is null when no policy matches', async () => {
    const account = await createTestAccount({
      sla_policies: [{ name: 'Urgent', priority: 'urgent', resolution_minutes: 240 }],
    });
    const body = { subject: 's', description: 'd', requester_email: 'a@b.co' };
    const urgent = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...body, priority: 'urgent' },
    });
    const created = Date.parse(urgent.body.ticket.created_at);
    expect(Date.parse(urgent.body.ticket.due_at) - created).toBe(240 * 60_000);
    expect(urgent.body.ticket.due_at.slice(-8)).toBe(urgent.body.ticket.created_at.slice(-8));
    const low = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...body, priority: 'low' },
    });
    expect(low.body.ticket.due_at).toBeNull();
  });

  it('a ticket created Friday 16:30 with a 60-minute business-hours target is due Monday 09:30 local, across DST too', async () => {
    const account = await createTestAccount({
      business_hours: {
        time_zone: 'Europe/Paris',
        weekly: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri'].map((d) => [d, [['09:00', '17:00']]])),
      },
      sla_policies: [{ name: 'High', priority: 'high', resolution_minutes: 60, business_hours: true }],
    });
    const cases = [
      ['2026-03-13T15:30:00Z', '2026-03-16T08:30:00.000000Z'], // Friday 16:30 CET → Monday 09:30 CET
      ['2026-10-23T14:30:00Z', '2026-10-26T08:30:00.000000Z'], // Friday 16:30 CEST → Monday 09:30 CET
    ];
    try {
      for (const [created, due] of cases) {
        setClockForTests(() => Date.parse(created as string) * 1000);
        const response = await gateway.call('POST', '/api/tickets', {
          key: account.apiKey,
          body: { subject: 's', description: 'd', requester_email: 'a@b.co', priority: 'high' },
        });
        expect(response.body.ticket.created_at).toBe((created as string).replace('Z', '.000000Z'));
        expect(response.body.ticket.due_at).toBe(due);
      }
    } finally {
      setClockForTests();
    }
  });

  it('counts business hours in the account calendar', async () => {
    // Open every day 00:00-00:01 only: a 2-minute target always lands two calendar days later at 00:01.
    const weekly = Object.fromEntries(
      ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [['00:00', '00:01']]]),
    );
    const account = await createTestAccount({
      business_hours: { time_zone: 'UTC', weekly },
      sla_policies: [{ name: 'Bugs', category: 'bug', resolution_minutes: 2, business_hours: true }],
    });
    setClockForTests(() => Date.parse('2026-05-05T12:00:00Z') * 1000);
    try {
      const response = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject: 's', description: 'd', requester_email: 'a@b.co', category_slug: 'bug' },
      });
      // One minute on the 6th (00:00-00:01), the second on the 7th.
      expect(response.body.ticket.due_at).toBe('2026-05-07T00:01:00.000000Z');
    } finally {
      setClockForTests();
    }
  });
});
