import { describe, expect, it } from 'vitest';
import { takeShardPlaces } from '#lib/data/events/lanes.ts';
import { EVENT_SHARDS } from '#lib/data/keys.ts';
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

  it("a page that passes only the legacy lane's seal gives its id, and the feed reads on after it", async () => {
    // Every shard holds an open place a writer was just handed (young: no reader may close it), so the first
    // page from the start settles the legacy lane alone: it seals it, passes the seal's range and stops at the
    // shards' open places. Its cursor is the seal's id, which is kept for good (no expiry): CI found the feed
    // refusing it (422) once a full-page reader met this race.
    const { apiKey: key, accountId } = await createTestAccount();
    await Promise.all(
      Array.from({ length: EVENT_SHARDS }, (_, shard) => takeShardPlaces(accountId, shard, 1)),
    );
    const created = await gateway.call('POST', '/api/tickets', {
      key,
      body: { subject: 'Seal', description: 'd', requester_email: 's@cursor.test' },
    });
    expect(created.status).toBe(201);
    const first = await gateway.call('GET', '/api/events?limit=100', { key });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toEqual([]);
    expect(first.body.next_cursor).toMatch(/^evt_/);
    const again = await gateway.call('GET', `/api/events?limit=100&after=${first.body.next_cursor}`, { key });
    expect(again.status, again.text).toBe(200);
    await follow(key, again.body.next_cursor);
  });
});
