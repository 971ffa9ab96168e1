import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { ticketKeys } from '#lib/data/keys.ts';
import { dynamo, getItem, scanAll, tableName } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, ticketEvent } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';

/**
 * Issue 27: "1,000 changes of one account, then a reindex of that account: every list and total identical to
 * before; another account's items untouched and never read". The reindex reads only the account's own
 * partitions (no Scan), holds at most a page of entities, and a run that stops is continued by the next one.
 */
const gateway = useGateway();

type Input = Record<string, unknown>;

/** Every partition key each DynamoDB call names, and the calls that name none (a Scan), while recording. */
const named: { operation: string; pk: string }[] = [];
let recording = false;
/** Stops the reindex as a lost answer would: the nth call of this operation (on this partition) does its work, then fails. */
let stop: { operation: string; pk?: string; nth: number; seen: number } | undefined;

function keysOf(operation: string, input: Input): string[] {
  const pks: string[] = [];
  const add = (item: unknown) => {
    if (item && typeof item === 'object' && 'pk' in item) pks.push(String((item as Input).pk));
  };
  if (operation === 'Query') {
    const values = (input.ExpressionAttributeValues ?? {}) as Input;
    pks.push(String(values[':pk']));
    add(input.ExclusiveStartKey);
  }
  add(input.Key);
  add(input.Item);
  for (const request of Object.values((input.RequestItems ?? {}) as Record<string, unknown>)) {
    const keys = (request as Input).Keys as Input[] | undefined;
    for (const key of keys ?? []) add(key);
    if (Array.isArray(request))
      for (const write of request as Input[]) {
        add((write.PutRequest as Input | undefined)?.Item);
        add((write.DeleteRequest as Input | undefined)?.Key);
      }
  }
  for (const entry of (input.TransactItems ?? []) as Input[])
    for (const write of Object.values(entry)) {
      add((write as Input).Key);
      add((write as Input).Item);
    }
  return pks;
}

beforeAll(() => {
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (recording) {
        const operation = String(context.commandName).replace(/Command$/, '');
        const pks = keysOf(operation, args.input as Input);
        if (pks.length === 0) named.push({ operation, pk: '' });
        for (const pk of pks) named.push({ operation, pk });
        if (stop?.operation === operation && (stop.pk === undefined || pks.includes(stop.pk))) {
          if (++stop.seen === stop.nth) {
            stop = undefined;
            await next(args);
            throw Object.assign(new Error('response timed out (injected)'), { name: 'TimeoutError' });
          }
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'reindexKeyRecorder', priority: 'high' },
  );
});
// The client outlives the file in its worker (the api tier shares a module graph): the recorder does not.
afterAll(() => {
  dynamo.middlewareStack.remove('reindexKeyRecorder');
});

async function recorded<T>(work: () => Promise<T>): Promise<T> {
  recording = true;
  try {
    return await work();
  } finally {
    recording = false;
  }
}

const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
const STATUSES = ['open', 'pending', 'in_progress', 'resolved', 'closed'] as const;
/** Statuses an update moves to (a closed ticket cannot be changed again). */
const MOVES = ['open', 'pending', 'in_progress', 'resolved'] as const;
const PLANS = ['gold', 'silver', 'bronze'] as const;
const WORDS = ['printer', 'toner', 'invoice', 'login', 'refund'] as const;

/** `n` changes: creates first (seeded), then updates of the tickets made, mixed (status, priority, assignee, field). */
async function changes(
  account: TestAccount,
  creates: number,
  updates: number,
  seed: number,
): Promise<string[]> {
  const caller = callerOf(account);
  const uuids: string[] = [];
  let i = seed;
  const rand = () => {
    i = (i * 1103515245 + 12345) % 2147483648;
    return i;
  };
  // The creates seeded: the items they write, without a request each (test/support/ticket-seeder.ts). The updates,
  // which are what leaves stale index items to sweep, go through the update handler in-process (as
  // test/api/round-trips.test.ts calls handlers): the same change and commit without HTTP, the authorizer's key read
  // and the contract check of each answer (the lists checked below still go through the gateway).
  const bodies = Array.from({ length: creates }, (_, n) => ({
    subject: `${WORDS[n % WORDS.length]} issue ${n}`,
    description: 'd',
    requester_email: `user${n % 23}@reindex-account.test`,
    priority: PRIORITIES[n % 4],
    custom_fields: { plan: PLANS[n % 3] },
  }));
  uuids.push(...(await seedTickets(account.accountId, bodies)).map((t) => t.uuid));
  const agents = account.agents.map((a: { id: number }) => a.id);
  for (let done = 0; done < updates; done += 10) {
    // Ten distinct tickets at a time (updates of one ticket in parallel would race for its version).
    const start = rand() % uuids.length;
    await Promise.all(
      Array.from({ length: Math.min(10, updates - done) }, async (_, j) => {
        const uuid = uuids[(start + j) % uuids.length] as string;
        const r = rand();
        const body =
          r % 4 === 0
            ? { status: MOVES[(r >> 3) % 4] }
            : r % 4 === 1
              ? { priority: PRIORITIES[(r >> 3) % 4] }
              : r % 4 === 2
                ? { assignee_id: (r >> 3) % 3 === 0 ? null : agents[(r >> 3) % agents.length] }
                : { custom_fields: { plan: PLANS[(r >> 3) % 3] }, subject: `${WORDS[(r >> 3) % 5]} again` };
        const response = await updateTicket(ticketEvent('PATCH', uuid, caller, body), lambdaContext);
        expect(response.statusCode, response.body).toBe(200);
      }),
    );
  }
  return uuids;
}

/** Every list answer and total of many filters and pages. */
async function answers(account: TestAccount) {
  const agents = account.agents.map((a: { id: number }) => a.id);
  const queries = [
    '',
    'page=2&per_page=50',
    'page=9&per_page=50',
    ...STATUSES.map((s) => `status=${s}&per_page=100`),
    ...PRIORITIES.map((p) => `priority=${p}&per_page=100`),
    ...agents.map((a) => `assignee_id=${a}&status=open&per_page=100`),
    ...agents.map((a) => `assignee_id=${a}&page=2&per_page=25`),
    ...PLANS.map((p) => `custom_fields[plan]=${p}&per_page=100`),
    ...PLANS.map((p) => `custom_fields[plan]=${p}&priority=high&per_page=100`),
    ...PLANS.map((p) => `custom_fields[plan]=${p}&status=open&page=2&per_page=20`),
    'status=open&priority=urgent&per_page=100',
    'requester_email=user3@reindex-account.test&per_page=100',
    'requester_email=user4@reindex-account.test&status=resolved',
    ...WORDS.map((w) => `search=${w}&per_page=100`),
    'search=again&priority=low&per_page=100',
    'search=toner&custom_fields[plan]=gold',
  ];
  return Promise.all(
    queries.map(async (q) => {
      const response = await gateway.call('GET', `/api/tickets?${q}`, { key: account.apiKey });
      expect(response.status, `${q}: ${response.text}`).toBe(200);
      return {
        q,
        total: response.body.meta.total,
        uuids: response.body.data.map((t: { uuid: string }) => t.uuid),
      };
    }),
  );
}

/** Every item of an account, as stored (the test's own read: a Scan, outside the recording). */
async function itemsOf(accountId: string) {
  const items = await scanAll({ TableName: tableName(), ConsistentRead: true });
  return items
    .filter((item) => String(item.pk).includes(accountId))
    .sort((a, b) => `${a.pk} ${a.sk}`.localeCompare(`${b.pk} ${b.sk}`));
}

describe('reindex of one account', () => {
  const file = {
    agents: [1, 2, 3].map((i) => ({ email: `agent${i}@reindex-account.test`, name: `Agent ${i}` })),
    auto_assignment: { enabled: true, method: 'round_robin' },
  };

  it('after 1,000 changes: every list and total as before, interrupted and resumed, another account never read', async () => {
    const a = await createTestAccount(file);
    const b = await createTestAccount(file);
    await changes(a, 400, 600, 7);
    await changes(b, 40, 30, 11);
    const before = await answers(a);
    expect(before.find((x) => x.q === '')?.total).toBe(400);
    const bBefore = await itemsOf(b.accountId);
    expect(bBefore.length).toBeGreaterThan(40);

    // A run stopped while building (its first page of the 4th of the tickets' partitions), one stopped while sweeping (its 10th check of
    // entities, a BatchGet: the build reads none), then one that finishes from where the second stopped.
    named.length = 0;
    const phases: string[] = [];
    for (const at of [
      { operation: 'Query', pk: ticketKeys.itemPartitions(a.accountId)[3], nth: 1 },
      { operation: 'BatchGetItem', nth: 10 },
    ]) {
      stop = { ...at, seen: 0 };
      await expect(recorded(() => tickets.rebuild(a.accountId, { pageSize: 50 }))).rejects.toThrow(
        'Service temporarily unavailable',
      );
      const progress = await getItem(ticketKeys.reindexProgress(a.accountId));
      phases.push(JSON.parse(String(progress?.progress)).phase);
      // Puts that change nothing, counters written as counted: an index that was exact stays exact meanwhile.
      expect(await answers(a)).toEqual(before);
    }
    expect(phases).toEqual(['build', 'sweep']);
    const lastRun = named.length;
    const finished = await recorded(() => tickets.rebuild(a.accountId, { pageSize: 50 }));
    expect(finished).toMatchObject({ entities: 400, resumed: true });
    expect(finished.written).toBeGreaterThan(400 * 5); // every posting and term put again, not skipped
    // It went on sweeping: the tickets' partition was not read again.
    expect(
      named
        .slice(lastRun)
        .filter((n) => n.operation === 'Query' && ticketKeys.itemPartitions(a.accountId).includes(n.pk)),
    ).toEqual([]);
    expect(await getItem(ticketKeys.reindexProgress(a.accountId))).toBeUndefined();
    expect(await answers(a)).toEqual(before);

    // Only A's partitions: every call named a partition key of A, none of B, and there was no Scan.
    expect(named.length).toBeGreaterThan(100);
    expect(named.filter((n) => n.operation === 'Scan' || n.pk === '')).toEqual([]);
    expect(named.filter((n) => !n.pk.includes(a.accountId))).toEqual([]);
    expect(named.filter((n) => n.pk.includes(b.accountId))).toEqual([]);
    expect(await itemsOf(b.accountId)).toEqual(bBefore);

    // A run from the start on the rebuilt index finds nothing to remove and changes no answer.
    const again = await tickets.rebuild(a.accountId);
    expect(again).toMatchObject({ entities: 400, removed: 0, resumed: false });
    expect(await answers(a)).toEqual(before);
  }, 300_000);

  it('holds at most a page of entities, whatever the account size', async () => {
    const account = await createTestAccount(file);
    await changes(account, 120, 30, 3);
    const before = await answers(account);

    const small = await tickets.rebuild(account.accountId, { pageSize: 20 });
    expect(small.entities).toBe(120);
    expect(small.peakHeld).toBeGreaterThan(0);
    expect(small.peakHeld).toBeLessThanOrEqual(20);
    expect(await answers(account)).toEqual(before);

    // The counter measures what was held: with a larger page it holds more at once.
    const large = await tickets.rebuild(account.accountId, { pageSize: 100 });
    expect(large.peakHeld).toBeGreaterThan(20);
    expect(large.peakHeld).toBeLessThanOrEqual(100);
    expect(await answers(account)).toEqual(before);
  }, 300_000);
});
