import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid, packOrderKey, unpackOrderKey } from '#lib/data/index/order-key.ts';
import { pendingMarksOf } from '#lib/data/index/pending.ts';
import { indexKeys, orderKeys, padId, ticketKeys } from '#lib/data/keys.ts';
import { batchDeleteAll, batchPutAll, dynamo, scanAll, tableName } from '#lib/data/store/client.ts';
import { ATTR } from '#lib/data/store/items.ts';
import { dimension } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { admin } from '#test/support/admin.ts';
import { useGateway } from '#test/support/http.ts';
import { asLanded, entityItemsOf, partitionItems } from '#test/support/index-snapshot.ts';

/**
 * `tickets reindex SLUG`: an index written before the queues and the blocks existed (or one that drifted) is
 * rebuilt to exactly what creating and updating the tickets writes today.
 */
const gateway = useGateway();

/** Every index item of the account as stored. */
async function indexItemsOf(accountId: string) {
  return scanAll({
    TableName: tableName(),
    FilterExpression:
      'begins_with(pk, :a) OR begins_with(pk, :b) OR pk = :c OR begins_with(pk, :d) OR begins_with(pk, :e)',
    ExpressionAttributeValues: {
      ':a': ticketKeys.postingPartition(accountId, ''),
      ':b': ticketKeys.blockPartition(accountId, ''),
      ':c': ticketKeys.legacyTermsPartition(accountId),
      ':e': `${ticketKeys.legacyTermsPartition(accountId)}#`,
      ':d': ticketKeys.statsPartition(accountId, ''),
    },
    ConsistentRead: true,
  });
}

/**
 * Every index item of the account, normalised: what a reader can observe of it. A sharded counter or stats cell
 * is read as the sum of its shards (writes spread over shards, the reindex puts the total in one).
 */
async function indexOf(accountId: string): Promise<Record<string, unknown>> {
  const scanned = await indexItemsOf(accountId);
  const summed = new Map<string, Record<string, unknown>>();
  for (const item of scanned) {
    const pk = item.pk as string;
    const sk = item.sk as string;
    const sharded = ticketKeys.isCounterSort(sk) || (pk.startsWith('TICKET_STATS') && /#\d\d$/.test(sk));
    if (!sharded) {
      summed.set(`${pk} ${sk}`, item);
      continue;
    }
    const cell = ticketKeys.isCounterSort(sk) ? '#COUNT' : sk.slice(0, -3);
    const sum = summed.get(`${pk} ${cell}`) ?? { pk, sk: cell };
    for (const [k, v] of Object.entries(item)) {
      if (k !== 'pk' && k !== 'sk') sum[k] = ((sum[k] as number | undefined) ?? 0) + (v as number);
    }
    summed.set(`${pk} ${cell}`, sum);
  }
  // A create's pending mark whose pending item is gone (lib/data/index/pending.ts) reads as no mark at all, and a
  // block key it added before its commit (`p`) as one added in it (`k`).
  const pending = pendingMarksOf(await partitionItems(ticketKeys.pendingPartition(accountId)));
  const committedMark = (k: string, v: unknown) => k === 'u' && typeof v === 'string' && !pending.has(v);
  const index: Record<string, unknown> = {};
  for (const item of summed.values()) asLanded(item, pending);
  for (const { pk, sk, ...rest } of summed.values()) {
    const values = Object.fromEntries(
      Object.entries(rest)
        // A counter, count or open work moved back to 0, a block emptied: as good as absent.
        .filter(([k, v]) => v !== 0 && !(v instanceof Set && v.size === 0) && !committedMark(k, v))
        .map(([k, v]) => [k, v instanceof Set ? [...v].sort() : v]),
    );
    const empty =
      Object.keys(values).length === 0 && (sk === '#COUNT' || String(pk).startsWith('TICKET_BLOCKS'));
    if (!empty) index[`${pk} ${sk}`] = values;
  }
  return index;
}

/** Each list query's total and page (uuids), as the account's key gets them. */
function ticketAnswers(key: string, queries: string[]) {
  return Promise.all(
    queries.map(async (q) => {
      const response = await gateway.call('GET', `/api/tickets?${q}`, { key });
      return {
        q,
        total: response.body.meta.total,
        uuids: response.body.data.map((t: { uuid: string }) => t.uuid),
      };
    }),
  );
}

describe('tickets reindex', () => {
  it('rebuilds missing queues and blocks, drifted counters and stale entries to what writes leave', async () => {
    const account = await createTestAccount({
      agents: [1, 2].map((i) => ({ email: `agent${i}@reindex.test`, name: `Agent ${i}` })),
      auto_assignment: { enabled: true, method: 'round_robin' },
    });
    const key = account.apiKey;
    const uuids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const response = await gateway.call('POST', '/api/tickets', {
        key,
        body: {
          subject: `Printer ${i} jammed`,
          description: 'd',
          requester_email: `user${i % 3}@reindex.test`,
          priority: (['low', 'high'] as const)[i % 2],
          custom_fields: { plan: i % 3 === 0 ? 'gold' : 'silver' },
        },
      });
      expect(response.status, response.text).toBe(201);
      uuids.push(response.body.ticket.uuid);
    }
    for (const [i, change] of [
      [0, { status: 'resolved' }],
      [3, { assignee_id: null, priority: 'urgent' }],
      [5, { custom_fields: { plan: 'gold' }, subject: 'Toner empty' }],
    ] as const) {
      const response = await gateway.call('PATCH', `/api/tickets/${uuids[i]}`, { key, body: change });
      expect(response.status, response.text).toBe(200);
    }
    const queries = [
      'status=open&custom_fields[plan]=gold',
      'priority=high&custom_fields[plan]=silver',
      `status=open&assignee_id=${account.agents[0]?.id}`,
      'status=open&priority=high',
      'requester_email=user0@reindex.test&status=open',
      'search=printer&priority=low',
    ];
    const answers = () => ticketAnswers(key, queries);
    const id = account.accountId;
    const expectedIndex = await indexOf(id);
    const expectedAnswers = await answers();

    // The layout of an older release: no queue postings or counters, no blocks. And drift: a counter off, a
    // posting of a ticket in a dimension it is not in, a block key of a ticket in a block of a dimension it is not
    // in. (Both in dimensions the index wrote, so listed in the account's directory: the reindex reads only the
    // partitions the directory names, docs/data-model.md "Reindex".)
    for (const { pk, sk } of await indexItemsOf(id)) {
      if (String(pk).includes('#queue#') || String(pk).startsWith('TICKET_BLOCKS'))
        await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: { pk, sk } }));
    }
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: ticketKeys.counter(id, dimension.customField(id, 'plan', 'silver')),
        UpdateExpression: 'SET n = :n',
        ExpressionAttributeValues: { ':n': 7 },
      }),
    );
    const resolved = orderKeyOfUuid(uuids[0] ?? '') as string;
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...ticketKeys.posting(id, dimension.priority('high'), resolved), type: 'ticket_posting' },
      }),
    );
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...ticketKeys.block(id, dimension.priority('urgent'), 5_000),
          [ATTR.blockKeys]: new Set([packOrderKey(resolved)]),
        },
      }),
    );
    expect(await answers()).not.toEqual(expectedAnswers);

    const { stdout } = await admin('tickets', 'reindex', account.slug);
    const printed = JSON.parse(stdout);
    expect(printed).toMatchObject({ tickets: 8, stale_items_removed: 2 });
    // The counter shards the writes spread over are folded into one each.
    expect(printed.count_shards_folded).toBeGreaterThan(0);
    expect(printed.index_items_written).toBeGreaterThan(8);

    expect(await indexOf(id)).toEqual(expectedIndex);
    expect(await answers()).toEqual(expectedAnswers);
  });

  it('turns an index of the layout before the sharded counters into the sharded one', async () => {
    const account = await createTestAccount({
      agents: [1, 2].map((i) => ({ email: `agent${i}@reindex-layout.test`, name: `Agent ${i}` })),
      auto_assignment: { enabled: true, method: 'least_busy' },
    });
    const key = account.apiKey;
    const uuids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const response = await gateway.call('POST', '/api/tickets', {
        key,
        body: {
          subject: `Router ${i} down`,
          description: 'd',
          requester_email: `user${i % 2}@reindex-layout.test`,
          priority: (['low', 'high', 'urgent'] as const)[i % 3],
          custom_fields: { plan: i % 2 === 0 ? 'gold' : 'silver' },
        },
      });
      expect(response.status, response.text).toBe(201);
      uuids.push(response.body.ticket.uuid);
    }
    for (const [i, change] of [
      [1, { status: 'resolved' }],
      [4, { priority: 'low', custom_fields: { plan: 'silver' } }],
      [7, { assignee_id: null }],
    ] as const) {
      const response = await gateway.call('PATCH', `/api/tickets/${uuids[i]}`, { key, body: change });
      expect(response.status, response.text).toBe(200);
    }
    const queries = [
      'status=open&priority=high',
      'custom_fields[plan]=gold&status=open',
      `assignee_id=${account.agents[0]?.id}&status=open`,
      'requester_email=user1@reindex-layout.test',
    ];
    const answers = () => ticketAnswers(key, queries);
    const id = account.accountId;
    const expectedIndex = await indexOf(id);
    const expectedAnswers = await answers();

    // The layout written before the sharded counters: every counter's shards in one `#COUNT` item, the block keys
    // in one block per 50 numbers; the stats cells gone (the reindex puts them back).
    const stored = await indexItemsOf(id);
    const counters = new Map<string, number>();
    const oldBlocks = new Map<string, Set<string>>();
    const replaced: { pk: string; sk: string }[] = [];
    for (const item of stored) {
      const pk = item.pk as string;
      const sk = item.sk as string;
      if (pk.startsWith(ticketKeys.statsPartition(id, ''))) {
        // Deleted, and put back by the reindex.
      } else if (ticketKeys.isCounterSort(sk)) {
        counters.set(pk, (counters.get(pk) ?? 0) + Number(item[ATTR.count] ?? 0));
      } else if (pk.startsWith(ticketKeys.blockPartition(id, ''))) {
        for (const packed of (item[ATTR.blockKeys] as Set<string> | undefined) ?? []) {
          const old = `${pk} ${padId(Math.floor(orderKeys.parts(unpackOrderKey(packed)).number / 50))}`;
          oldBlocks.set(old, (oldBlocks.get(old) ?? new Set()).add(packed));
        }
      } else continue;
      replaced.push({ pk, sk });
    }
    expect(counters.size).toBeGreaterThan(0);
    expect(oldBlocks.size).toBeGreaterThan(0);
    await batchDeleteAll(replaced);
    await batchPutAll([
      ...[...counters].map(([pk, n]) => ({ pk, sk: '#COUNT', [ATTR.count]: n })),
      ...[...oldBlocks].map(([pkSk, packed]) => {
        const [pk, sk] = pkSk.split(' ');
        return { pk, sk, [ATTR.blockKeys]: packed };
      }),
    ]);

    const { stdout } = await admin('tickets', 'reindex', account.slug);
    const printed = JSON.parse(stdout);
    // The old blocks hold no key that belongs there: stale. The old `#COUNT` items are folded.
    expect(printed).toMatchObject({
      tickets: 12,
      stale_items_removed: oldBlocks.size,
      empty_blocks_removed: 0,
    });
    expect(printed.count_shards_folded).toBe(counters.size);

    expect(await indexOf(id)).toEqual(expectedIndex);
    expect(await answers()).toEqual(expectedAnswers);
  });

  /**
   * Issue 40: ticket items and terms in partitions, queues without blocks and counted in stats cells. An account
   * written before keeps every ticket in one partition and every term in one, a block and a counter per queue;
   * the reindex moves the tickets and the terms, deletes those blocks and counters, puts the agents' queue cells,
   * and search, the queues and a queue with a filter answer as before.
   */
  it('moves the tickets and terms of the one partition of earlier releases into theirs, and drops queue blocks', async () => {
    const account = await createTestAccount({
      agents: [1, 2].map((i) => ({ email: `agent${i}@reindex-terms.test`, name: `Agent ${i}` })),
      auto_assignment: { enabled: true, method: 'round_robin' },
    });
    const key = account.apiKey;
    for (let i = 0; i < 8; i++) {
      const response = await gateway.call('POST', '/api/tickets', {
        key,
        body: {
          subject: `Printer ${i} jammed again`,
          description: 'd',
          requester_email: `user${i % 3}@reindex-terms.test`,
          priority: i % 2 === 0 ? 'high' : 'low',
          custom_fields: { plan: i % 2 === 0 ? 'gold' : 'silver' },
        },
      });
      expect(response.status, response.text).toBe(201);
    }
    const agent = account.agents[0]?.id;
    const queries = [
      'search=printer',
      'search=jam',
      `search=${'user1'}`,
      'search=5',
      `status=open&assignee_id=${agent}`,
      `status=open&assignee_id=${agent}&custom_fields[plan]=gold`,
    ];
    const answers = () => ticketAnswers(key, queries);
    const id = account.accountId;
    const expectedIndex = await indexOf(id);
    const expectedAnswers = await answers();
    expect(expectedAnswers.every((a) => a.total > 0)).toBe(true);

    const stored = await indexItemsOf(id);
    const terms = stored.filter((item) =>
      String(item.pk).startsWith(`${ticketKeys.legacyTermsPartition(id)}#`),
    );
    expect(terms.length).toBeGreaterThan(8);
    await batchDeleteAll(terms.map((t) => ({ pk: t.pk, sk: t.sk })));
    // Queues were counted by counters in their posting partitions: the agents' queue cells were not there.
    const agentQueues = stored.filter((item) => item.pk === ticketKeys.statsPartition(id, 'agent_queues'));
    expect(agentQueues.length).toBeGreaterThan(1);
    await batchDeleteAll(agentQueues.map((t) => ({ pk: t.pk, sk: t.sk })));
    const queue = dimension.queue('open', undefined, agent);
    await batchPutAll([
      ...terms.map((t) => ({ ...t, pk: ticketKeys.legacyTermsPartition(id) })),
      { ...ticketKeys.block(id, queue, 1), [ATTR.blockKeys]: new Set(['x0000000000000001']) },
      { ...ticketKeys.counter(id, queue), [ATTR.count]: 4 },
    ]);
    // Ticket items were all in one partition.
    const ticketItems = await entityItemsOf('TICKET', id);
    expect(ticketItems).toHaveLength(8);
    await batchDeleteAll(ticketItems.map((t) => ({ pk: t.pk, sk: t.sk })));
    await batchPutAll(ticketItems.map((t) => ({ ...t, pk: ticketKeys.movedItemPartition(id) })));
    expect((await answers()).find((a) => a.q === 'search=printer')?.total).toBe(0);
    // A run the earlier release left off midway: its cursor an order key of the one partition, no partition number.
    const halfway = [...ticketItems].sort((a, b) => String(a.sk).localeCompare(String(b.sk)))[3]?.sk;
    const earlierProgress = {
      phase: 'build',
      stats: {},
      entities: 4,
      written: 0,
      removed: 0,
      folded: 0,
      emptied: 0,
    };
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...ticketKeys.reindexProgress(id),
          type: 'index_reindex',
          progress: JSON.stringify({ ...earlierProgress, after: halfway }),
        },
      }),
    );

    const { stdout } = await admin('tickets', 'reindex', account.slug);
    // The old queue counter is deleted as its shards are folded (the index below holds none).
    expect(JSON.parse(stdout)).toMatchObject({ tickets: 8, stale_items_removed: terms.length + 1 });
    expect(await indexOf(id)).toEqual(expectedIndex);
    expect(await answers()).toEqual(expectedAnswers);
    expect(await entityItemsOf('TICKET', id)).toEqual(ticketItems);
  });

  it('deletes the postings and sorted postings of dimensions a queue now lists', async () => {
    const account = await createTestAccount({
      agents: [{ email: 'agent1@reindex-merged.test', name: 'Agent 1' }],
      auto_assignment: { enabled: true, method: 'round_robin' },
    });
    const key = account.apiKey;
    for (let i = 0; i < 4; i++) {
      const body = { subject: `Fax ${i}`, description: 'd', requester_email: 'u@reindex-merged.test' };
      const response = await gateway.call('POST', '/api/tickets', {
        key,
        body: { ...body, priority: i % 2 === 0 ? 'high' : 'low' },
      });
      expect(response.status, response.text).toBe(201);
    }
    const agent = account.agents[0]?.id as number;
    const queries = [
      'status=open',
      'priority=high',
      `priority=high&assignee_id=${agent}`,
      'status=open&page=2&per_page=3',
      'status=open&sort=due',
    ];
    const answers = () => ticketAnswers(key, queries);
    const id = account.accountId;
    const expectedIndex = await indexOf(id);
    const expectedAnswers = await answers();
    expect(expectedAnswers.map((a) => a.total)).toEqual([4, 2, 2, 4, 4]);

    // What an earlier release wrote beside: each ticket's posting under its status and under a priority (each
    // with its directory entry).
    const olds = (await entityItemsOf('TICKET', id)).map((t) => String(t.sk));
    const earlier = ['status#open', 'priority#high'];
    // And their `sort=due` postings: the status × priority queue's, copied under the status and the priority.
    const sorted = await scanAll({
      TableName: tableName(),
      FilterExpression: 'begins_with(pk, :p)',
      ExpressionAttributeValues: { ':p': ticketKeys.sortedPartition(id, 'due', 'queue#s=open#p=') },
      ConsistentRead: true,
    });
    expect(sorted.length).toBe(4);
    await batchPutAll(
      sorted.flatMap((item) =>
        ['status#open', 'priority#high'].map((dim) => ({
          ...item,
          pk: ticketKeys.sortedPartition(id, 'due', dim),
        })),
      ),
    );
    await batchPutAll([
      ...earlier.flatMap((dim) =>
        olds.map((sk) => ({ ...ticketKeys.posting(id, dim, sk), type: 'ticket_posting' })),
      ),
      ...earlier.map((dim) => ({ ...ticketKeys.directoryEntry(id, dim), type: 'index_dimension' })),
    ]);
    // Nothing reads them: the lists answer as before, and the reindex deletes them.
    expect(await answers()).toEqual(expectedAnswers);

    const { stdout } = await admin('tickets', 'reindex', account.slug);
    expect(JSON.parse(stdout)).toMatchObject({ tickets: 4, stale_items_removed: 2 * olds.length + 8 });
    expect(await indexOf(id)).toEqual(expectedIndex);
    expect(await answers()).toEqual(expectedAnswers);
  });

  it('says what it needs when the account is unknown or the arguments are wrong', async () => {
    const unknown = await admin('tickets', 'reindex', 'no-such-account-x');
    expect(unknown).toMatchObject({ code: 1 });
    expect(unknown.stderr).toContain('no account has the slug no-such-account-x');
    const wrong = await admin('tickets', 'reindex');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('usage:');
  });
});

describe('deals reindex', () => {
  it('puts back deal stats cells that are gone', async () => {
    const stages = ['Lead', 'Proposal', 'Closing'].map((name, i) => ({
      name,
      color: '#123456',
      probability: i * 30,
    }));
    const account = await createTestAccount({ pipelines: [{ name: 'Sales', default: true, stages }] });
    const key = account.apiKey;
    const pipeline = account.pipelines[0];
    const ids = pipeline?.stages.map((s) => s.id) ?? [];
    const uuids: string[] = [];
    for (let i = 0; i < 9; i++) {
      const response = await gateway.call('POST', '/api/deals', {
        key,
        body: {
          name: `Deal ${i}`,
          contact_email: `buyer${i % 4}@reindex-deals.test`,
          contact_first_name: 'Buyer',
          amount: `${100 + i}.25`,
          currency: i % 2 === 0 ? 'EUR' : 'USD',
          stage_id: ids[i % 3],
        },
      });
      expect(response.status, response.text).toBe(201);
      uuids.push(response.body.data.uuid);
    }
    for (const [i, change] of [
      [2, { stage_id: ids[0], amount: '7.50' }],
      [5, { status: 'won' }],
    ] as const) {
      const response = await gateway.call('PATCH', `/api/deals/${uuids[i]}`, { key, body: change });
      expect(response.status, response.text).toBe(200);
    }
    const answers = async () =>
      Promise.all(
        [
          `/api/pipelines/${pipeline?.id}/board`,
          `/api/deals?stage_id=${ids[0]}`,
          '/api/deals?status=open',
        ].map(async (path) => (await gateway.call('GET', path, { key })).text),
      );
    const expected = await answers();

    // Every deal stats cell gone.
    const id = account.accountId;
    const keys = indexKeys('DEAL');
    const cells = await scanAll({
      TableName: tableName(),
      FilterExpression: 'begins_with(pk, :p)',
      ExpressionAttributeValues: { ':p': keys.statsPartition(id, '') },
      ConsistentRead: true,
    });
    expect(cells.length).toBeGreaterThan(0);
    await batchDeleteAll(cells.map(({ pk, sk }) => ({ pk, sk })));
    expect(await answers()).not.toEqual(expected);

    const printed = JSON.parse((await admin('deals', 'reindex', account.slug)).stdout);
    expect(printed).toMatchObject({ deals: 9, resumed: false });
    expect(await answers()).toEqual(expected);
  });
});
