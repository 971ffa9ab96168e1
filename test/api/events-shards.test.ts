import { isDeepStrictEqual } from 'node:util';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bumpLane,
  bumpTarget,
  eventSettleMs,
  eventShardOfObject,
  readFeed,
  sharingPlaceTakes,
  takeEventPlaces,
  takeShardPlaces,
} from '#lib/data/events.ts';
import { EVENT_SHARDS, eventKeys } from '#lib/data/keys.ts';
import { dynamo, queryAll, tableName } from '#lib/data/store/client.ts';
import { ConcurrentWrite } from '#lib/data/store/errors.ts';
import { commit } from '#lib/data/store/transact.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { objectInShard } from '#test/support/event-shards.ts';
import { withFault } from '#test/support/faults.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';
import { cancelConflictingTransactions } from '#test/support/transaction-conflicts.ts';

/**
 * The feed's place counters, one per shard (lib/data/events/lanes.ts; docs/data-model.md, "Events"): a reader
 * moves a lagging shard past the places it serves (a bump) instead of waiting, racing readers and writers keep the
 * feed exactly once and never insert before a served event, each object's events keep their order across
 * concurrent writers of many shards.
 */
const gateway = useGateway();
const ticketBody = { subject: 'Printer on fire', description: 'Smoke.', requester_email: 'ann@client.test' };

let uninstall: (() => void) | undefined;
afterEach(() => {
  uninstall?.();
  uninstall = undefined;
});

/** Events of an object pinned to `shard` committed through the data layer (a draft as the domain writes one). */
async function commitInShard(accountId: string, shard: number, count: number, tag = 'lane') {
  const object = objectInShard(shard, tag);
  for (let i = 0; i < count; i++) {
    const { actions } = await takeEventPlaces(accountId, [
      { type: 'ticket.updated', object, version: i + 1 },
    ]);
    await commit(actions);
  }
}

/** Every page of the feed from `after`, through the data layer (no gateway: faster, and the wrapper sees it all). */
async function readAll(accountId: string, after?: string, limit = 7) {
  const ids: string[] = [];
  let cursor = after;
  for (let page = 0; page < 1_000; page++) {
    const { events, last } = await readFeed(accountId, { after: cursor, limit, matches: () => true });
    ids.push(...events.map((e) => e.id));
    if (last === undefined) return { ids, after: cursor };
    cursor = last;
  }
  throw new Error('the feed did not end');
}

describe('a lagging shard', () => {
  it("is moved past the page's places by the reader: the page does not wait the settle window", async () => {
    const account = await createTestAccount();
    const { after } = await readAll(account.accountId);
    // One shard far ahead of the 15 others: 30 events in shard 3, none elsewhere.
    await commitInShard(account.accountId, 3, 30);
    const started = Date.now();
    const { ids } = await readAll(account.accountId, after, 100);
    const took = Date.now() - started;
    expect(ids).toHaveLength(30);
    // Well below the settle window (10 s): the lagging shards were bumped, not waited for.
    expect(eventSettleMs()).toBeGreaterThanOrEqual(10_000);
    expect(took).toBeLessThan(5_000);
    // Every other shard's counter now stands past the last event served, and a range void covers what it skipped.
    const lastPlace = eventKeys.parse(
      String(eventKeys.sort(Number.parseInt(ids.at(-1)?.slice(4, 14) ?? '', 36))),
    ).seq;
    for (let shard = 0; shard < EVENT_SHARDS; shard++) {
      if (shard === 3) continue;
      const items = await queryAll({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': eventKeys.shardPartition(account.accountId, shard) },
        ConsistentRead: true,
      });
      const ranges = items.filter((i) => i.from !== undefined);
      expect(ranges.length, `shard ${shard}`).toBeGreaterThan(0);
      expect(Math.max(...ranges.map((r) => eventKeys.parse(String(r.sk)).seq))).toBeGreaterThan(lastPlace);
    }
    // A writer of a bumped shard now takes a place past every event served.
    const [place] = await takeShardPlaces(account.accountId, 5, 1);
    expect(place).toBeGreaterThan(lastPlace);
  });
});

describe('the feed read from its start', () => {
  it('holds at a shard whose only place a writer holds; once that is older than any living writer, closes it and the late commit fails', async () => {
    const account = await createTestAccount();
    const all = () => readFeed(account.accountId, { limit: 100, matches: () => true });
    // Shard 4's first place taken, its commit not sent yet; shard 5's first event (a place above it) committed.
    const held = await takeEventPlaces(account.accountId, [
      { type: 'ticket.updated', object: objectInShard(4, 'held'), version: 1 },
    ]);
    await commitInShard(account.accountId, 5, 1);
    expect((await all()).events).toEqual([]);
    // Shard 4's last take 11 s ago, as far as the reader can tell.
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: eventKeys.counter(account.accountId, 4),
        UpdateExpression: 'SET #at = :at',
        ExpressionAttributeNames: { '#at': 'at' },
        ExpressionAttributeValues: { ':at': Date.now() - 11_000 },
      }),
    );
    expect((await all()).events).toHaveLength(1);
    await expect(commit(held.actions)).rejects.toBeInstanceOf(ConcurrentWrite);
    expect((await all()).events).toHaveLength(1);
  });
});

describe('racing readers and writers', () => {
  it('readers bumping the same shards at once: no error, the same feed for each', async () => {
    const account = await createTestAccount();
    const { after } = await readAll(account.accountId);
    await commitInShard(account.accountId, 9, 12);
    // As DynamoDB: a transaction meeting another in flight on one of its items is cancelled.
    const conflicts = cancelConflictingTransactions();
    uninstall = conflicts.uninstall;
    const reads = await Promise.all(
      Array.from({ length: 6 }, (_, i) => readAll(account.accountId, after, 1 + i)),
    );
    for (const { ids } of reads) expect(ids).toEqual(reads[0]?.ids);
    expect(reads[0]?.ids).toHaveLength(12);
    // Over HTTP too (an account of real tickets): every page answered 200 (readFeedToEnd throws on any other).
    const other = await createTestAccount();
    for (let i = 0; i < 5; i++) {
      const made = await gateway.call('POST', '/api/tickets', { key: other.apiKey, body: ticketBody });
      expect(made.status).toBe(201);
    }
    const pages = await Promise.all(
      Array.from({ length: 4 }, () => readFeedToEnd(gateway.call, other.apiKey, { limit: 3 })),
    );
    expect(pages[0]?.events).toHaveLength(5);
    for (const page of pages) expect(page.events.map((e) => e.id)).toEqual(pages[0]?.events.map((e) => e.id));
  });

  it('a writer racing a bump of its shard gets a place past the bump, or the bump finds it: never a place a reader skipped', async () => {
    const account = await createTestAccount();
    const shard = 6;
    const conflicts = cancelConflictingTransactions();
    uninstall = conflicts.uninstall;
    for (let round = 0; round < 20; round++) {
      const [before] = await takeShardPlaces(account.accountId, shard, 1);
      const gap = (before as number) + EVENT_SHARDS;
      const target = bumpTarget(shard, gap);
      const [bump, taken] = await Promise.all([
        bumpLane(account.accountId, shard, gap, target),
        takeShardPlaces(account.accountId, shard, 1),
      ]);
      const place = taken[0] as number;
      if (bump.kind === 'covered') {
        // The bump's range and the writer's place never meet.
        expect(place < bump.from || place > bump.to, `round ${round}`).toBe(true);
        if (place > (before as number)) expect(place === gap || place > target).toBe(true);
      } else if (bump.kind === 'handed') {
        // The writer took the gap first: the bump left it to the writer.
        expect(place).toBe(gap);
      }
    }
  });

  it('writers of many shards and readers at once: each reader reads a prefix of the final feed, exactly once', async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    const tickets: string[] = [];
    for (let i = 0; i < 6; i++) {
      const made = await gateway.call('POST', '/api/tickets', { key, body: ticketBody });
      tickets.push(made.body.ticket.uuid as string);
    }
    const conflicts = cancelConflictingTransactions();
    uninstall = conflicts.uninstall;
    let writing = true;
    const seen: FeedEvent[][] = [[], [], []];
    const readers = seen.map(async (events, r) => {
      let after: string | undefined;
      while (writing) {
        const params = new URLSearchParams({ limit: String(2 + r) });
        if (after) params.set('after', after);
        const page = await gateway.call('GET', `/api/events?${params}`, { key });
        expect(page.status, page.text).toBe(200);
        events.push(...page.body.data);
        if (page.body.next_cursor) after = page.body.next_cursor;
      }
      const rest = await readFeedToEnd(gateway.call, key, { after, limit: 5 });
      events.push(...rest.events);
    });
    // Concurrent PATCHes of the six tickets (their shards differ: their creation times differ).
    const patches = await Promise.all(
      tickets.map(async (uuid, t) => {
        const versions: number[] = [];
        for (let i = 0; i < 6; i++) {
          const answer = await gateway.call('PATCH', `/api/tickets/${uuid}`, {
            key,
            body: { subject: `Subject ${t}.${i}` },
          });
          if (answer.status === 200) versions.push(Number(/\d+/.exec(answer.headers.get('etag') ?? '')?.[0]));
        }
        return versions;
      }),
    );
    writing = false;
    await Promise.all(readers);
    const { events: feed } = await readFeedToEnd(gateway.call, key, { limit: 100 });
    for (const [r, events] of seen.entries()) {
      expect(
        isDeepStrictEqual(
          events.map((e) => e.id),
          feed.map((e) => e.id),
        ),
        `reader ${r}`,
      ).toBe(true);
    }
    // Each ticket's events: versions 1.. in order, one per change answered 200.
    for (const [t, uuid] of tickets.entries()) {
      const versions = feed.filter((e) => e.data.object.uuid === uuid).map((e) => e.data.version);
      expect(versions).toEqual([1, ...(patches[t] ?? [])]);
    }
    expect(new Set(tickets.map((uuid) => eventShardOfObject({ uuid }))).size).toBeGreaterThan(1);
  });
});

describe("a runner's shared place takes (sharingPlaceTakes)", () => {
  const shard = 3;
  const updates = (operations: string[]) => operations.filter((o) => o === 'UpdateItem').length;

  it('takes asked together, and while one is in flight, go as one UpdateItem each: every place once, none skipped', async () => {
    const account = await createTestAccount();
    const counts = Array.from({ length: 30 }, (_, i) => 1 + (i % 3));
    // The first take held until the test lets it go: the later takes are surely asked while it is in flight. The
    // client's stack sees the store's own command (UpdateItemCommand, not the document client's UpdateCommand: a hook
    // on that never ran, and the test passed only while the first take answered after the second turn).
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = false;
    beforeCallOnce('UpdateItemCommand', `EVENT_SEQ#${account.accountId}#`, () => {
      holding = true;
      return held;
    });
    const { result, operations } = await withFault(undefined, () =>
      sharingPlaceTakes(async () => {
        // Ten asked at once; then, while their take is in flight, ten more, and a turn later ten more: the twenty wait
        // for it, and go together (without the wait, three takes).
        const turn = () => new Promise((resolve) => setImmediate(resolve));
        const asked = counts.slice(0, 10).map((n) => takeShardPlaces(account.accountId, shard, n));
        await turn();
        asked.push(...counts.slice(10, 20).map((n) => takeShardPlaces(account.accountId, shard, n)));
        await turn();
        asked.push(...counts.slice(20).map((n) => takeShardPlaces(account.accountId, shard, n)));
        release();
        return Promise.all(asked);
      }),
    );
    expect(holding).toBe(true);
    expect(updates(operations)).toBe(2);
    result.forEach((places, i) => {
      expect(places).toHaveLength(counts[i] as number);
    });
    const all = result.flat().sort((a, b) => a - b);
    const total = counts.reduce((sum, n) => sum + n, 0);
    expect(new Set(all).size).toBe(total);
    // The shard's first `total` places, each handed to one take, in the order asked within each take.
    const [next] = await takeShardPlaces(account.accountId, shard, 1);
    expect(all).toEqual(
      Array.from({ length: total }, (_, i) => (next as number) - (total - i) * EVENT_SHARDS),
    );
  });

  it('a shared take whose answer is lost fails every take that waited on it, its places closed; the next goes on, and outside a pass each take is its own', async () => {
    const account = await createTestAccount();
    const failed = await withFault({ operation: 'UpdateItem', mode: 'lost-answer' }, () =>
      sharingPlaceTakes(async () => {
        const lost = await Promise.allSettled(
          Array.from({ length: 5 }, (_, i) => takeShardPlaces(account.accountId, shard, 1 + (i % 2))),
        );
        // The same pass takes again: a new take, past the lost one's places.
        const next = await Promise.all(
          Array.from({ length: 3 }, () => takeShardPlaces(account.accountId, shard, 1)),
        );
        return { lost, next };
      }),
    );
    expect(failed.result.lost.map((r) => r.status)).toEqual(Array(5).fill('rejected'));
    const next = failed.result.next.flat().sort((a, b) => a - b);
    expect(new Set(next).size).toBe(3);
    // The lost take's 7 places (it landed; its answer did not) are just before the next take's, each closed: a void
    // item at each, so no reader waits on them.
    const lostPlaces = Array.from({ length: 7 }, (_, i) => (next[0] as number) - (7 - i) * EVENT_SHARDS);
    const voids = await Promise.all(
      lostPlaces.map(async (seq) => {
        const { Item } = await dynamo.send(
          new GetCommand({
            TableName: tableName(),
            Key: eventKeys.place(account.accountId, seq),
            ConsistentRead: true,
          }),
        );
        return Item?.type;
      }),
    );
    expect(voids).toEqual(Array(7).fill(eventKeys.itemType.void));
    const alone = await withFault(undefined, () =>
      Promise.all(Array.from({ length: 4 }, () => takeShardPlaces(account.accountId, shard, 1))),
    );
    expect(updates(alone.operations)).toBe(4);
    expect(new Set(alone.result.flat()).size).toBe(4);
  });
});
