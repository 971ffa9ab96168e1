import { afterEach, describe, expect, it } from 'vitest';
import { ALL } from '#lib/data/index/declaration.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import {
  agePendingItems,
  clearHolds,
  commitOf,
  failNext,
  hold,
  listAll,
  pendingBlockAdd,
  pendingItems,
} from '#test/support/pending-holds.ts';

/**
 * A helper's attack on a create's block keys written before its commit (`p`) and its sorted postings (`u` = its
 * pending id): intersections of two filters and `sort=due` pages read while a create is held between them and its
 * commit (then landed, cancelled, timed out); changes right after it lands; a failed block key and its retry; and
 * the reindex run while a create is under way, the create landing before it, after it, or in the middle of a
 * dimension's sweep; a sort=due page ordered from a bounded sorted partition a held create outside the filter has a
 * posting in, and one past the end of an intersection a held create would join. Every view must agree with GET: its
 * total, its rows (paged by 1 and by 100), each once. Five of these failed before the fixes beside them (the commits
 * say which).
 */
const gateway = useGateway();
afterEach(clearHolds);

type Seen = Record<string, { total: number; uuids: string[] }>;

const pkOf = (input: Record<string, unknown>) =>
  (input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[':pk'];

/** The reindex's page Query (it sets a Limit) of a dimension's blocks. */
const sweepOfBlocks = (accountId: string, dim: string) => (input: Record<string, unknown>) =>
  pkOf(input) === tickets.index.keys.blockPartition(accountId, dim) && input.Limit !== undefined;

/** A Query of partition `then`, the first one after a Query of partition `first` (the order a sweep reads them). */
function queryAfter(first: string, then: string) {
  let seen = false;
  return (input: Record<string, unknown>) => {
    const pk = pkOf(input);
    if (pk === first) seen = true;
    return seen && pk === then;
  };
}

/** Every packed key an account's block partition of `dim` holds, by set (`k`, `u`, `p`). */
async function blockSets(accountId: string, dim: string) {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': tickets.index.keys.blockPartition(accountId, dim) },
    ConsistentRead: true,
  });
  const of = (attr: string) => items.flatMap((i) => [...((i[attr] as Set<string> | undefined) ?? [])]);
  return { k: of('k'), u: of('u'), p: of('p') };
}

/** Views of an account, each shape read whole (by 100) and paged by 1, agreeing with each other. */
function viewsOf(call: () => ReturnType<typeof keyedCaller>) {
  /** Every shape side by side (held creates must be released within their request's deadline). */
  async function views(shapes: string[]): Promise<Seen> {
    const out: Seen = {};
    await Promise.all(
      shapes.map(async (q) => {
        const [whole, paged] = await Promise.all([listAll(call(), q, 100), listAll(call(), q, 1)]);
        expect(whole.listed, `${q}: listed vs total`).toBe(whole.total);
        expect(new Set(whole.uuids).size, `${q}: each once`).toBe(whole.listed);
        expect(paged, `${q}: paged by 1`).toEqual(whole);
        out[q] = { total: whole.total, uuids: whole.uuids };
      }),
    );
    return out;
  }
  function expectViews(seen: Seen, want: Record<string, string[]>) {
    for (const [q, uuids] of Object.entries(want)) {
      expect({ q, ...seen[q] }).toEqual({ q, total: uuids.length, uuids: [...uuids].sort() });
    }
  }
  return { views, expectViews };
}

function useViews() {
  const account = useTestAccount();
  const call = () => keyedCaller(gateway, account.apiKey);
  return { account, call, ...viewsOf(call) };
}

describe('intersections and sort=due pages while creates are held after their block keys', () => {
  const { account, call, views, expectViews } = useViews();
  const body = (who: string, priority: string) => ({
    subject: `ibis ${who}`,
    description: 'd',
    priority,
    requester_email: `${who}@ibis.test`,
    custom_fields: { zone: 'ibis', who: `held-${who}` },
  });

  it('held at the commit, or half-way through the block keys; then landed, cancelled, timed out', async () => {
    const high = await call()('POST', '/api/tickets', body('base-high', 'high'));
    const low = await call()('POST', '/api/tickets', body('base-low', 'low'));
    expect(high.status, high.text).toBe(201);
    expect(low.status, low.text).toBe(201);
    const [hu, lu] = [high.body.ticket.uuid as string, low.body.ticket.uuid as string];
    const shapes = [
      'status=open&priority=high',
      'status=open&priority=low',
      'priority=high&custom_fields[zone]=ibis',
      'custom_fields[zone]=ibis&status=open',
      'sort=due',
      'status=open&sort=due',
      'priority=high&sort=due',
      'status=open&priority=high&sort=due',
      'custom_fields[zone]=ibis&priority=high&sort=due',
      'custom_fields[zone]=ibis&sort=due',
    ];
    const want = (highs: string[], lows: string[]) => ({
      'status=open&priority=high': highs,
      'status=open&priority=low': lows,
      'priority=high&custom_fields[zone]=ibis': highs,
      'custom_fields[zone]=ibis&status=open': [...highs, ...lows],
      'sort=due': [...highs, ...lows],
      'status=open&sort=due': [...highs, ...lows],
      'priority=high&sort=due': highs,
      'status=open&priority=high&sort=due': highs,
      'custom_fields[zone]=ibis&priority=high&sort=due': highs,
      'custom_fields[zone]=ibis&sort=due': [...highs, ...lows],
    });

    // a, b, c held at their commit (every block key added, in `p`); d held at one of its block keys.
    const holds = ['a', 'b', 'c'].map((who) => hold('TransactWriteItemsCommand', commitOf(`held-${who}`)));
    const posts = ['a', 'b', 'c'].map((who) => call()('POST', '/api/tickets', body(who, 'high')));
    await Promise.all(holds.map((h) => h.reached));
    const blockHeld = hold('UpdateItemCommand', pendingBlockAdd);
    const postD = call()('POST', '/api/tickets', body('d', 'high'));
    await blockHeld.reached;
    expect(await pendingItems(account.accountId)).toHaveLength(4);
    const held = await blockSets(account.accountId, dimension.priority('high'));
    expect(held.p.length).toBeGreaterThanOrEqual(3);
    expectViews(await views(shapes), want([hu], [lu]));

    holds[0]?.release('pass');
    holds[1]?.release('cancel');
    holds[2]?.release('timeout-unsent');
    blockHeld.release('pass');
    const [a, b, c, d] = await Promise.all([...posts, postD]);
    expect(a?.status, a?.text).toBe(201);
    expect(b?.status, b?.text).toBe(201);
    expect(c?.status, c?.text).toBeGreaterThanOrEqual(500);
    expect(d?.status, d?.text).toBe(201);
    const landed = [hu, a?.body.ticket.uuid, b?.body.ticket.uuid, d?.body.ticket.uuid] as string[];
    for (const u of landed) expect((await call()('GET', `/api/tickets/${u}`)).status).toBe(200);
    expectViews(await views(shapes), want(landed, [lu]));
    // The cancelled create's first attempt took its keys out of `p`; the timed-out one's stay (its pending item too).
    expect(await pendingItems(account.accountId)).toHaveLength(2);
  });
});

describe('a landed create whose block keys are in `p`, changed right after', () => {
  const { account, call, views, expectViews } = useViews();

  it('priority and status moved, deleted, restored: the intersections follow, no key left behind', async () => {
    const r = await call()('POST', '/api/tickets', {
      subject: 'heron',
      description: 'd',
      priority: 'high',
      requester_email: 'x@heron.test',
      custom_fields: { zone: 'heron' },
    });
    expect(r.status, r.text).toBe(201);
    const u = r.body.ticket.uuid as string;
    const highBlock = await blockSets(account.accountId, dimension.priority('high'));
    expect(highBlock.p, 'its key went to `p`').toHaveLength(1);
    const shapes = [
      'status=open&priority=high',
      'status=open&priority=low',
      'status=pending&priority=low',
      'priority=high&custom_fields[zone]=heron',
      'priority=low&custom_fields[zone]=heron',
      'priority=high&sort=due',
      'priority=low&sort=due',
      'status=open&priority=high&sort=due',
    ];
    const only = (...qs: string[]) => Object.fromEntries(shapes.map((q) => [q, qs.includes(q) ? [u] : []]));
    // Where the ticket is listed when open and high, and when pending and low (each view met twice below).
    const openHigh = only(
      'status=open&priority=high',
      'priority=high&custom_fields[zone]=heron',
      'priority=high&sort=due',
      'status=open&priority=high&sort=due',
    );
    const pendingLow = only(
      'status=pending&priority=low',
      'priority=low&custom_fields[zone]=heron',
      'priority=low&sort=due',
    );
    expectViews(await views(shapes), openHigh);

    const p1 = await call()('PATCH', `/api/tickets/${u}`, { priority: 'low' });
    expect(p1.status, p1.text).toBe(200);
    const afterMove = await blockSets(account.accountId, dimension.priority('high'));
    expect(afterMove, 'priority=high holds no key of it').toEqual({ k: [], u: [], p: [] });
    expectViews(
      await views(shapes),
      only('status=open&priority=low', 'priority=low&custom_fields[zone]=heron', 'priority=low&sort=due'),
    );

    const p2 = await call()('PATCH', `/api/tickets/${u}`, { status: 'pending' });
    expect(p2.status, p2.text).toBe(200);
    const openBlock = await blockSets(account.accountId, dimension.status('open'));
    expect(openBlock, 'status=open holds no key of it').toEqual({ k: [], u: [], p: [] });
    expectViews(await views(shapes), pendingLow);

    expect((await call()('DELETE', `/api/tickets/${u}`)).status).toBe(200);
    expectViews(await views(shapes), only());
    expect((await call()('POST', `/api/trash/${u}/restore`, {})).status).toBe(200);
    expectViews(await views(shapes), pendingLow);
    const p3 = await call()('PATCH', `/api/tickets/${u}`, { priority: 'high', status: 'open' });
    expect(p3.status, p3.text).toBe(200);
    expectViews(await views(shapes), openHigh);
  });
});

describe('a block key that fails', () => {
  const { call, views, expectViews } = useViews();
  const body = {
    subject: 'stork',
    description: 'd',
    priority: 'high',
    requester_email: 'x@stork.test',
    custom_fields: { zone: 'stork' },
  };
  const shapes = [
    'status=open&priority=high',
    'custom_fields[zone]=stork&status=open',
    'priority=high&sort=due',
  ];

  it('lands but its answer is lost: the create fails, nothing is found; its retry (same key) is found once', async () => {
    const key = 'adv-block-landed-1';
    const failed = failNext('UpdateItemCommand', pendingBlockAdd, 'timeout-landed');
    const first = await call()('POST', '/api/tickets', body, { 'Idempotency-Key': key });
    expect(failed.wasReached()).toBe(true);
    expect(first.status, first.text).toBeGreaterThanOrEqual(500);
    expectViews(await views(shapes), Object.fromEntries(shapes.map((q) => [q, []])));
    const again = await call()('POST', '/api/tickets', body, { 'Idempotency-Key': key });
    expect(again.status, again.text).toBe(201);
    expectViews(await views(shapes), Object.fromEntries(shapes.map((q) => [q, [again.body.ticket.uuid]])));
  });
});

const crane = (who: string) => ({
  subject: `crane ${who}`,
  description: 'd',
  priority: 'high',
  requester_email: `${who}@crane.test`,
  custom_fields: { zone: 'crane', who: `held-${who}` },
});
const craneShapes = [
  'status=open&priority=high',
  'priority=high&custom_fields[zone]=crane',
  'custom_fields[zone]=crane',
  'sort=due',
  'status=open&sort=due',
  'status=open&priority=high&sort=due',
];
const everywhere = (uuids: string[]) => Object.fromEntries(craneShapes.map((q) => [q, uuids]));

describe('the reindex while creates are under way, landing or cancelled after it', () => {
  const { account, call, views, expectViews } = useViews();

  it('landed after it: found everywhere; cancelled: its keys gone; timed out: kept while young, then gone', async () => {
    const base = await call()('POST', '/api/tickets', crane('base'));
    expect(base.status, base.text).toBe(201);
    const holds = ['a', 'b'].map((who) => hold('TransactWriteItemsCommand', commitOf(`held-${who}`)));
    const posts = ['a', 'b'].map((who) => call()('POST', '/api/tickets', crane(who)));
    await Promise.all(holds.map((h) => h.reached));
    await tickets.rebuild(account.accountId);
    holds[0]?.release('pass');
    holds[1]?.release('cancel');
    const [a, b] = await Promise.all(posts);
    expect(a?.status, a?.text).toBe(201);
    expect(b?.status, b?.text).toBe(201);
    const landed = [base.body.ticket.uuid, a?.body.ticket.uuid, b?.body.ticket.uuid] as string[];
    expectViews(await views(craneShapes), everywhere(landed));
    // Every key in priority=high's blocks is a landed ticket's.
    const high = await blockSets(account.accountId, dimension.priority('high'));
    expect(new Set([...high.k, ...high.p]).size).toBe(landed.length);
    expect(high.u).toEqual([]);
    await tickets.rebuild(account.accountId);
    expectViews(await views(craneShapes), everywhere(landed));

    // One that times out unsent: its keys stay in `p` (checked) through a reindex while its pending item is young,
    // and are taken out by one once it is older than a create can run; the blocks hold the landed tickets only.
    failNext('TransactWriteItemsCommand', commitOf('held-lost'), 'timeout-unsent');
    const lost = await call()('POST', '/api/tickets', crane('lost'));
    expect(lost.status, lost.text).toBeGreaterThanOrEqual(500);
    const keysIn = async (dim: string) => {
      const sets = await blockSets(account.accountId, dim);
      return { all: new Set([...sets.k, ...sets.p]).size, p: sets.p.length, u: sets.u.length };
    };
    const zone = dimension.customField(account.accountId, 'zone', 'crane');
    expect((await keysIn(zone)).all).toBe(landed.length + 1);
    await tickets.rebuild(account.accountId);
    expect(await keysIn(zone)).toEqual({ all: landed.length + 1, p: 1, u: 0 });
    expectViews(await views(craneShapes), everywhere(landed));
    await agePendingItems(account.accountId, 16 * 60 * 1000);
    await tickets.rebuild(account.accountId);
    for (const dim of [zone, dimension.priority('high'), dimension.status('open')])
      expect({ dim, ...(await keysIn(dim)) }).toEqual({ dim, all: landed.length, p: 0, u: 0 });
    expectViews(await views(craneShapes), everywhere(landed));
  });
});

/**
 * A create under way when the reindex starts (its pending item is young: the sweep keeps what it wrote before its
 * commit) lands while the sweep is in the middle of a dimension: after it read what it checks the keys against
 * (the dimension's postings, or the page's tickets), before it read the pending items. Held there.
 */
describe('the reindex while a create under way lands in the middle of a sweep', () => {
  /** A fresh account (a bug here must not spill into the next test's views): its base ticket, then `who` held. */
  async function landDuring(
    who: string,
    sweepRead: (accountId: string) => ReturnType<typeof hold>,
  ): Promise<
    { landed: string[]; accountId: string; call: () => ReturnType<typeof keyedCaller> } & ReturnType<
      typeof viewsOf
    >
  > {
    const account = await createTestAccount();
    const call = () => keyedCaller(gateway, account.apiKey);
    const base = await call()('POST', `/api/tickets`, crane(`base-${who}`));
    expect(base.status, base.text).toBe(201);
    const before = await listAll(call(), 'custom_fields[zone]=crane');
    const held = hold('TransactWriteItemsCommand', commitOf(`held-${who}`));
    const post = call()('POST', '/api/tickets', crane(who));
    await held.reached;
    const read = sweepRead(account.accountId);
    const rebuild = tickets.rebuild(account.accountId);
    await read.reached;
    held.release('pass');
    const landed = await post;
    expect(landed.status, landed.text).toBe(201);
    read.release('pass');
    await rebuild;
    for (const u of [...before.uuids, landed.body.ticket.uuid])
      expect((await call()('GET', `/api/tickets/${u}`)).status).toBe(200);
    return {
      landed: [...before.uuids, landed.body.ticket.uuid as string],
      accountId: account.accountId,
      call,
      ...viewsOf(call),
    };
  }

  it("of status=open's blocks (its keys checked against the tickets, after the pending items): still found", async () => {
    const { landed, views, expectViews } = await landDuring('c', (accountId) =>
      hold('QueryCommand', sweepOfBlocks(accountId, dimension.status('open'))),
    );
    expectViews(await views(craneShapes), everywhere(landed));
  });

  it("of a custom field's blocks (after its postings were listed): still in the intersections", async () => {
    const { landed, views, expectViews } = await landDuring('f', (accountId) =>
      hold('QueryCommand', sweepOfBlocks(accountId, dimension.customField(accountId, 'zone', 'crane'))),
    );
    expectViews(await views(craneShapes), everywhere(landed));
  });

  it("of sort=due's postings in `all` (after a page's tickets were read): still on the sorted pages", async () => {
    const { landed, views, expectViews } = await landDuring('d', (accountId) =>
      hold(
        'QueryCommand',
        queryAfter(
          tickets.index.keys.sortedPartition(accountId, 'due', ALL),
          tickets.index.keys.pendingPartition(accountId),
        ),
      ),
    );
    expectViews(await views(craneShapes), everywhere(landed));
  });

  it("of a custom field's postings (after a page's tickets were read): its posting is kept", async () => {
    const zoneOf = (accountId: string) => dimension.customField(accountId, 'zone', 'crane');
    const { landed, accountId, call } = await landDuring('e', (accountId) =>
      hold(
        'QueryCommand',
        queryAfter(
          tickets.index.keys.postingPartition(accountId, zoneOf(accountId)),
          tickets.index.keys.pendingPartition(accountId),
        ),
      ),
    );
    const zone = zoneOf(accountId);
    // Its posting, put before its commit, is still there. (Not the total: a create landing between the sweep's
    // read of the counter's shards and its fold may add to a shard the fold then replaces, a reindex's
    // documented limit with writes under way.)
    const postings = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': tickets.index.keys.postingPartition(accountId, zone) },
      ConsistentRead: true,
    });
    const keys = postings.map((p) => String(p.sk)).filter((sk) => !tickets.index.keys.isCounterSort(sk));
    expect(keys, 'postings of custom_fields[zone]=crane').toHaveLength(landed.length);
    const listed = await listAll(call(), 'custom_fields[zone]=crane');
    expect(listed.uuids).toEqual([...landed].sort());
  });
});

/**
 * A filter of a bounded dimension and another (`status=open&custom_fields[zone]=…&sort=due`) is ordered from the
 * bounded dimension's sorted partition, read up to its count (list-sorted.ts). A create under way there that the
 * filter does not match has its sorted posting put already (marked), and not yet counted: read as it is (its mark
 * deferred), it takes the place of the partition's last posting, a match's.
 */
describe('sort=due of a filter ordered from a bounded sorted partition, while a create outside the filter is held', () => {
  const { call, views, expectViews } = useViews();

  it("the held create's sorted posting takes no matching ticket's place", async () => {
    const made: string[] = [];
    for (const who of ['one', 'two']) {
      const r = await call()('POST', '/api/tickets', {
        subject: `plover ${who}`,
        description: 'd',
        priority: 'low',
        requester_email: `${who}@plover.test`,
        custom_fields: { zone: 'plover' },
      });
      expect(r.status, r.text).toBe(201);
      made.push(r.body.ticket.uuid);
    }
    const shapes = [
      'custom_fields[zone]=plover&status=open&sort=due',
      'custom_fields[zone]=plover&priority=low&sort=due',
      'custom_fields[zone]=plover&status=open',
    ];
    const want = Object.fromEntries(shapes.map((q) => [q, made]));
    expectViews(await views(shapes), want);
    // Another zone, open too (and urgent: its due time, if any, sorts first), held at its commit.
    const held = hold('TransactWriteItemsCommand', commitOf('held-other'));
    const post = call()('POST', '/api/tickets', {
      subject: 'plover other',
      description: 'd',
      priority: 'urgent',
      requester_email: 'other@plover.test',
      custom_fields: { zone: 'elsewhere', who: 'held-other' },
    });
    await held.reached;
    const seen = await views(shapes).finally(() => held.release('pass'));
    expect((await post).status).toBe(201);
    expectViews(seen, want);
    expectViews(await views(shapes), want);
  });
});

/**
 * A page past the end of an intersection's sort=due list (list-sorted.ts: its total is the matches it counted, a held
 * create's `p` keys among them as they are) answers that total.
 */
describe('sort=due of an intersection, a page past its end, while a create it would match is held', () => {
  const { call } = useViews();

  it('answers the total GET agrees with', async () => {
    const body = (who: string) => ({
      subject: `avocet ${who}`,
      description: 'd',
      priority: 'high',
      requester_email: `${who}@avocet.test`,
      custom_fields: { zone: 'avocet', who: `held-${who}` },
    });
    const base = await call()('POST', '/api/tickets', body('base'));
    expect(base.status, base.text).toBe(201);
    const held = hold('TransactWriteItemsCommand', commitOf('held-late'));
    const post = call()('POST', '/api/tickets', body('late'));
    await held.reached;
    const totals: Record<string, number> = {};
    try {
      for (const q of [
        'priority=high&custom_fields[zone]=avocet&sort=due',
        'status=open&priority=high&custom_fields[zone]=avocet&sort=due',
        'priority=high&custom_fields[zone]=avocet',
      ]) {
        for (const page of ['per_page=1&page=3', 'per_page=100&page=2', 'per_page=100']) {
          const r = await call()('GET', `/api/tickets?${q}&${page}`);
          expect(r.status, r.text).toBe(200);
          totals[`${q}&${page}`] = r.body.meta.total;
        }
      }
    } finally {
      held.release('pass');
    }
    expect((await post).status).toBe(201);
    expect(totals).toEqual(Object.fromEntries(Object.keys(totals).map((q) => [q, 1])));
  });
});
