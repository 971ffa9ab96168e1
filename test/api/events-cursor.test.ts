import { describe, expect, it } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/** Every cursor a page of the feed gives is one the feed takes back (decisions.md, "Events"). */
const gateway = useGateway();

async function follow(key: string, after: string | null) {
  for (let i = 0; i < 50 && after; i++) {
    const r = await gateway.call('GET', `/api/events?limit=100&after=${after}`, { key });
    expect(r.status, r.text).toBe(200);
    after = r.body.next_cursor;
  }
}

describe('the feed cursor', () => {
  it('a page read before any event, and pages after, give cursors the feed takes back', async () => {
    const { apiKey: key } = await createTestAccount();
    const empty = await gateway.call('GET', '/api/events?limit=100', { key });
    expect(empty.status, empty.text).toBe(200);
    await follow(key, empty.body.next_cursor);
    const created = await gateway.call('POST', '/api/tickets', {
      key,
      body: { subject: 'Cursor', description: 'd', requester_email: 'c@cursor.test' },
    });
    expect(created.status).toBe(201);
    const first = await gateway.call('GET', '/api/events?limit=100', { key });
    expect(first.status, first.text).toBe(200);
    await follow(key, first.body.next_cursor);
  });
});
