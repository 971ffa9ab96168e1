import { afterEach, describe, expect, it } from 'vitest';
import { useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import {
  clearHolds,
  commitOf,
  hold,
  listAll,
  markedItems,
  pendingItems,
} from '#test/support/pending-holds.ts';
import { fewestRoundTrips } from '#test/support/round-trips.ts';

/**
 * Several creates of the same words and values held at once between their marked puts and their
 * commit, every read shape made meanwhile; then one lands, one is cancelled (and decided again), one times out
 * unsent. Every list, total and search must agree with GET at each point, each ticket listed once.
 */
const gateway = useGateway();
afterEach(clearHolds);

describe('creates held between their marked puts and their commit', () => {
  const account = useTestAccount();
  const call = () => keyedCaller(gateway, account.apiKey);

  const body = (tag: string, who: string) => ({
    subject: `${tag} sighting ${who}`,
    description: 'd',
    requester_email: `${tag}@park.test`,
    custom_fields: { zone: tag, who: `held-${who}` },
  });

  const shapes = (tag: string) => [
    `search=${tag}`,
    `search=${tag.slice(0, 3)}`,
    `search=${tag}&status=open`,
    `search=${tag}&custom_fields[zone]=${tag}`,
    `search=${tag}%20sighting`,
    `custom_fields[zone]=${tag}`,
    `custom_fields[zone]=${tag}&status=open`,
    `custom_fields[zone]=${tag}&requester_email=${tag}@park.test`,
    `requester_email=${tag}@park.test`,
    `requester_email=${tag}@park.test&status=open&priority=medium`,
    `custom_fields[zone]=${tag}&sort=due`,
    `search=${tag}&sort=due`,
    // The account holds only this test's tickets: the sorted postings of `all`, a status and a priority.
    'sort=due',
    'status=open&sort=due',
    'priority=medium&sort=due',
    'status=open&priority=medium',
  ];

  /**
   * Every shape: its total, its tickets (paged by 1 and by 100), each once. The shapes side by side, so that the
   * held creates are released well within their requests' deadline (8.5 s), on a busy machine too.
   */
  async function everyShape(tag: string) {
    const out: Record<string, { total: number; uuids: string[] }> = {};
    await Promise.all(
      shapes(tag).map(async (q) => {
        const [whole, paged] = await Promise.all([listAll(call(), q, 100), listAll(call(), q, 1)]);
        // A page past the end (of every key read too, held creates' among them) answers the same total, no rows.
        const beyond = await call()('GET', `/api/tickets?${q}&per_page=100&page=2`);
        expect({ q, total: beyond.body.meta?.total, rows: beyond.body.data?.length }).toEqual({
          q,
          total: whole.total,
          rows: 0,
        });
        expect(whole.listed, `${q}: listed vs total`).toBe(whole.total);
        expect(new Set(whole.uuids).size, `${q}: each once`).toBe(whole.listed);
        expect(paged, `${q}: paged by 1`).toEqual(whole);
        out[q] = { total: whole.total, uuids: whole.uuids };
      }),
    );
    return out;
  }
  const expectEverywhere = (seen: Record<string, { total: number; uuids: string[] }>, uuids: string[]) => {
    const want = [...uuids].sort();
    for (const [q, got] of Object.entries(seen)) {
      expect({ q, ...got }).toEqual({ q, total: want.length, uuids: want });
    }
  };
  const numberOf = (t: { reference: string }) => Number(t.reference.replace(/\D/g, ''));

  it('three held at once, then one lands, one is cancelled and decided again, one times out', async () => {
    const tag = 'kiwi';
    const base = await call()('POST', '/api/tickets', body(tag, 'base'));
    expect(base.status, base.text).toBe(201);
    const baseUuid = base.body.ticket.uuid as string;
    const baseNumber = numberOf(base.body.ticket);

    const holds = ['a', 'b', 'c'].map((who) => hold('TransactWriteItemsCommand', commitOf(`held-${who}`)));
    const posts = ['a', 'b', 'c'].map((who) => call()('POST', '/api/tickets', body(tag, who)));
    await Promise.all(holds.map((h) => h.reached));
    expect(await pendingItems(account.accountId)).toHaveLength(3);
    expect((await markedItems(account.accountId)).length).toBeGreaterThan(0);

    // Meanwhile: only the base ticket, in every shape; the held ones' numbers find nothing.
    expectEverywhere(await everyShape(tag), [baseUuid]);
    for (const n of [baseNumber + 1, baseNumber + 2, baseNumber + 3]) {
      const r = await call()('GET', `/api/tickets?search=${n}`);
      expect({ n, total: r.body.meta.total }).toEqual({ n, total: 0 });
    }

    holds[0]?.release('pass');
    holds[1]?.release('cancel');
    holds[2]?.release('timeout-unsent');
    const [a, b, c] = await Promise.all(posts);
    expect(a?.status, a?.text).toBe(201);
    expect(b?.status, b?.text).toBe(201);
    expect(c?.status, c?.text).toBeGreaterThanOrEqual(500);
    const landed = [baseUuid, a?.body.ticket.uuid, b?.body.ticket.uuid];
    for (const u of landed) expect((await call()('GET', `/api/tickets/${u}`)).status).toBe(200);

    expectEverywhere(await everyShape(tag), landed);
    const lost = [baseNumber + 1, baseNumber + 2, baseNumber + 3].filter(
      (n) => n !== numberOf(a?.body.ticket) && n !== numberOf(b?.body.ticket),
    );
    expect(lost).toHaveLength(1);
    const lostSearch = await call()('GET', `/api/tickets?search=${lost[0]}`);
    expect(lostSearch.body.meta.total).toBe(0);
    expect((await call()('GET', `/api/tickets/TKT-${String(lost[0]).padStart(6, '0')}`)).status).toBe(404);
    for (const t of [a?.body.ticket, b?.body.ticket]) {
      const r = await call()('GET', `/api/tickets?search=${numberOf(t)}`);
      expect(r.body.data.map((x: { uuid: string }) => x.uuid)).toEqual([t.uuid]);
    }
    // The timed-out create's pending item stays (its commit may have landed, as far as it knows); the cancelled
    // one's expires; the landed one's is gone.
    const left = await pendingItems(account.accountId);
    expect(left).toHaveLength(2);
  });

  it('a page of two filters or a word that meets a held create checks that key alone: one round trip more', async () => {
    const tag = 'plum';
    const base = await call()('POST', '/api/tickets', body(tag, 'base'));
    expect(base.status, base.text).toBe(201);
    const queries = [`search=${tag}&status=open`, `custom_fields[zone]=${tag}&status=open`, `search=${tag}`];
    const read = (q: string) => fewestRoundTrips(() => call()('GET', `/api/tickets?${q}&per_page=1`));
    // One at a time: the figures are counted for one request at a time (test/support/dynamo-figures.ts).
    const before: number[] = [];
    for (const q of queries) before.push((await read(q)).roundTrips);

    const held = hold('TransactWriteItemsCommand', commitOf('held-x'));
    const post = call()('POST', '/api/tickets', body(tag, 'x'));
    await held.reached;
    for (const [i, q] of queries.entries()) {
      const during = await read(q);
      expect({ q, total: during.result.body.meta.total }).toEqual({ q, total: 1 });
      expect(during.result.body.data.map((t: { uuid: string }) => t.uuid)).toEqual([base.body.ticket.uuid]);
      // The held create's key read by key (one BatchGet), not the page's blocks, terms and entities again (2-3).
      expect({ q, roundTrips: during.roundTrips }).toEqual({ q, roundTrips: (before[i] as number) + 1 });
    }
    held.release('pass');
    expect((await post).status).toBe(201);
  });
});
