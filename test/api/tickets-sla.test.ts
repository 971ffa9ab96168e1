import { describe, expect, it } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import { atTime } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';

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
    for (const [created, due] of cases) {
      const response = await atTime(Date.parse(created as string), () =>
        gateway.call('POST', '/api/tickets', {
          key: account.apiKey,
          body: { subject: 's', description: 'd', requester_email: 'a@b.co', priority: 'high' },
        }),
      );
      expect(response.body.ticket.created_at).toBe((created as string).replace('Z', '.000000Z'));
      expect(response.body.ticket.due_at).toBe(due);
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
    const response = await atTime(Date.parse('2026-05-05T12:00:00Z'), () =>
      gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject: 's', description: 'd', requester_email: 'a@b.co', category_slug: 'bug' },
      }),
    );
    // One minute on the 6th (00:00-00:01), the second on the 7th.
    expect(response.body.ticket.due_at).toBe('2026-05-07T00:01:00.000000Z');
  });
});
