import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { deals as dealIndex } from '#lib/data/deals/deal-index.ts';
import { contactKeys } from '#lib/data/keys.ts';
import { dynamo, queryAll, tableName } from '#lib/data/store/client.ts';
import { ATTR } from '#lib/data/store/items.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { type FaultMode, representativePositions, sweepPositions, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';

/**
 * Every DynamoDB call of a write, failed in turn (issue 9): for each call position of a create (plain, heavy
 * with 45 custom fields and a 30-word subject, least-busy) and of a deal with a new contact, the call fails
 * before reaching the store or after the store did its work. Then: the client got 201, or 503 and a retry
 * with the same Idempotency-Key gives the one ticket; a ticket is in every list, filter, total and search or
 * in none; nothing is duplicated.
 */
const gateway = useGateway();
/**
 * The views' reads (~20 list pages a position) through a gateway of their own whose authorizer answers are cached,
 * as API Gateway caches them: a read is one authorizer run fewer, nothing else. The creates, whose calls the faults
 * count and fail, and their retries go through `gateway`, which authorizes every request.
 */
const reader = useGateway(300);

const MODES: FaultMode[] = ['lost-request', 'lost-answer'];
const newTag = () => `f${randomBytes(5).toString('hex')}`;
/**
 * The heavy ticket's custom fields: the fewest whose create has more items than one transaction holds. Each field
 * puts 1 counter in the commit (beside its ~10 fixed actions and its event's places) and 1 directory entry of its
 * value (keyed: a fresh one each ticket, in the commit as far as it fits), so the commit takes 100 actions and the
 * rest go before it, marked unconfirmed (lib/data/index/additions.ts, cutPlan), from 45 fields on (44 fit:
 * exerciseTicket checks it spilled). Each field is also a call position (its block key's UpdateItem): 50 fields
 * were 10 runs more, each a create, its retry and two rounds of views.
 */
const HEAVY_FIELDS = 45;
const CF_KEYS = Array.from({ length: HEAVY_FIELDS }, (_, i) => `k${i}`);

const ticketBodies = {
  plain: (tag: string) => ({
    subject: `Printer ${tag}`,
    description: 'd',
    requester_email: `${tag}@faults.test`,
    custom_fields: { marker: tag },
  }),
  heavy: (tag: string) => ({
    // The tag is the last word and the last custom fields come last: they land among the marked items.
    subject: [...Array.from({ length: 29 }, (_, i) => `word${i}x`), tag].join(' '),
    description: 'd',
    requester_email: `${tag}@faults.test`,
    custom_fields: Object.fromEntries(CF_KEYS.map((k) => [k, `${tag}-${k}`])),
  }),
};

type Kind = keyof typeof ticketBodies;

/** How many tickets of the tag every view shows; fails unless all views agree. */
async function ticketViews(key: string, kind: Kind, tag: string): Promise<number> {
  const get = async (query: string) => {
    const response = await reader.call('GET', `/api/tickets?per_page=100&${query}`, { key });
    expect(response.status, query).toBe(200);
    expect(response.body.data.length, query).toBe(Math.min(response.body.meta.total, 100));
    return response.body;
  };
  const views: Record<string, number> = {};
  const byEmail = await get(`requester_email=${tag}%40faults.test`);
  views.email = byEmail.meta.total;
  views.search = (await get(`search=${tag}`)).meta.total;
  views.openAndEmail = (await get(`status=open&requester_email=${tag}%40faults.test`)).meta.total;
  const cfKeys = kind === 'heavy' ? ['k0', 'k30', CF_KEYS.at(-1) as string] : ['marker'];
  for (const k of cfKeys) {
    const value = kind === 'heavy' ? `${tag}-${k}` : tag;
    views[`cf ${k}`] = (await get(`custom_fields[${k}]=${value}`)).meta.total;
  }
  const reference = byEmail.data[0]?.reference;
  if (reference) views.reference = (await get(`search=${reference}`)).meta.total;
  const counts = new Set(Object.values(views));
  expect(counts.size, JSON.stringify(views)).toBe(1);

  // The account's totals agree with a recount of what the lists return.
  const all = await get('');
  const open = await get('status=open');
  const domain = await get('search=faults.test');
  expect(all.meta.total).toBe(all.data.length);
  expect(open.meta.total).toBe(all.meta.total);
  expect(domain.meta.total).toBe(all.meta.total);
  return [...counts][0] as number;
}

/**
 * The account's directory entries put before a commit, marked unconfirmed (`u` = 1): the items of a create that
 * did not fit its transaction (the keyed dimensions' entries come last in it).
 */
const entriesPastCommit = async (accountId: string) =>
  (
    await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': tickets.index.keys.directoryPartition(accountId) },
      ConsistentRead: true,
    })
  ).filter((entry) => entry[ATTR.unconfirmed] === 1).length;

/** Each mode at each of `positions` call positions. */
const runsOf = (positions: number[]) => MODES.flatMap((mode) => positions.map((at) => ({ mode, at })));

/**
 * The positions of a create that follows the account's first ticket, as in a busy container. `warmBy`: that first
 * ticket made by a create through the API, or seeded (test/support/ticket-seeder.ts writes the items its create
 * writes; a heavy create is ~135 ms of the worker's CPU and 33 store calls, its seed a fraction) with the key used once
 * (a list read: its last use written) and the account's rules cached, as the create leaves them. A seeded sweep
 * first proves that the create after the seed makes the same calls as the create after a create.
 */
async function exerciseTicket(kind: Kind, accountFile: Record<string, unknown>, warmBy: 'create' | 'seed') {
  /** An account whose settings cache is warm (one ticket made), as in a busy container: its next create is measured. */
  const warmAccount = async (by = warmBy) => {
    const account = await createTestAccount(accountFile);
    if (by === 'create') {
      expect((await post(account, newTag())).status).toBe(201);
    } else {
      await seedTickets(account.accountId, [ticketBodies[kind](newTag())]);
      const read = await gateway.call('GET', '/api/tickets?per_page=1', { key: account.apiKey });
      expect(read.status).toBe(200);
      await getActiveRules(account.accountId);
    }
    return account;
  };
  const post = (account: TestAccount, tag: string) =>
    gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: ticketBodies[kind](tag),
      headers: { 'Idempotency-Key': `key-${tag}` },
    });
  const probe = await warmAccount();
  const spilledBefore = await entriesPastCommit(probe.accountId);
  const dry = await withFault(undefined, () => post(probe, newTag()));
  expect(dry.result.status).toBe(201);
  // The heavy create's items pass one transaction (HEAVY_FIELDS): some went before its commit; the others' fit.
  const spilled = (await entriesPastCommit(probe.accountId)) - spilledBefore;
  expect(spilled > 0, `${kind}: items written before the commit, marked (${spilled})`).toBe(kind === 'heavy');
  if (warmBy === 'seed') {
    const afterCreate = await warmAccount('create');
    const asAfterCreate = await withFault(undefined, () => post(afterCreate, newTag()));
    expect(asAfterCreate.result.status).toBe(201);
    expect(dry.operations, 'the calls of a create after a seeded ticket and after a created one').toEqual(
      asAfterCreate.operations,
    );
  }
  const positions = dry.operations.length;
  // The heavy create's every position but the inside of its block keys' run (representativePositions); the others'
  // every position (a plain create's 5 block keys too).
  const failed =
    kind === 'heavy' ? representativePositions(dry.operations) : dry.operations.map((_, i) => i + 1);
  let exercised = 0;
  // A few positions at once, each the second create of an account of its own (as the dry run was).
  await sweepPositions(runsOf(failed), async ({ mode, at }) => {
    const account = await warmAccount();
    const tag = newTag();
    const first = await withFault({ at, mode }, () => post(account, tag));
    const label = `${kind} ${mode} at call ${at} of ${dry.operations.join(',')}`;
    expect([201, 503], label).toContain(first.result.status);
    const seen = await ticketViews(account.apiKey, kind, tag);
    if (first.result.status === 201) {
      expect(seen, label).toBe(1);
    } else {
      expect(first.result.body, label).toEqual({ message: 'Service temporarily unavailable.' });
      expect(first.result.headers.get('retry-after'), label).toBe('1');
      const retry = await post(account, tag);
      expect(retry.status, label).toBe(201);
      // A change that landed is replayed (same ticket), one that did not is made now.
      expect(retry.headers.get('idempotent-replayed') === 'true', label).toBe(seen === 1);
      expect(await ticketViews(account.apiKey, kind, tag), label).toBe(1);
    }
    exercised++;
  });
  return { positions, failed: failed.length, exercised };
}

describe('a create survives a failure of any of its store calls', () => {
  it('plain ticket', async () => {
    const { positions, exercised } = await exerciseTicket('plain', {}, 'seed');
    expect(positions).toBeGreaterThanOrEqual(5);
    expect(exercised).toBe(positions * 2);
  });

  // Two faulted requests and a retry at each of its call positions but the inside of its block keys' run (one
  // UpdateItem a field, side by side: representativePositions), where every one of its ~64 took 74 s of a loaded
  // `npm test`.
  it(`heavy ticket: ${HEAVY_FIELDS} custom fields and a 30-word subject (more items than one transaction holds)`, async () => {
    const { positions, failed, exercised } = await exerciseTicket('heavy', {}, 'seed');
    expect(positions).toBeGreaterThanOrEqual(6);
    expect(failed).toBeLessThan(positions);
    expect(exercised).toBe(failed * 2);
  }, 240_000);

  it('least-busy assignment', async () => {
    const { positions, exercised } = await exerciseTicket(
      'plain',
      {
        auto_assignment: { enabled: true, method: 'least_busy' },
        agents: [
          { email: 'a@desk.test', name: 'A' },
          { email: 'b@desk.test', name: 'B' },
        ],
        // The seeder refuses least-busy (it decides from the store's counts): its first ticket is a create.
      },
      'create',
    );
    expect(positions).toBeGreaterThanOrEqual(6);
    expect(exercised).toBe(positions * 2);
  });
});

describe('a deal with a new contact survives a failure of any of its store calls', () => {
  it('gives one deal and one contact, whatever call fails', async () => {
    const post = (account: TestAccount, tag: string) =>
      gateway.call('POST', '/api/deals', {
        key: account.apiKey,
        body: { name: `Deal ${tag}`, contact_email: `${tag}@deals.test`, contact_first_name: 'Nora' },
        headers: { 'Idempotency-Key': `key-${tag}` },
      });
    const contactOf = async (account: TestAccount, tag: string) =>
      (
        await dynamo.send(
          new GetCommand({
            TableName: tableName(),
            Key: contactKeys.byEmail(account.accountId, `${tag}@deals.test`),
            ConsistentRead: true,
          }),
        )
      ).Item;
    /** An account whose settings cache is warm (one deal made): its next deal is measured. */
    const warmAccount = async () => {
      const account = await createTestAccount();
      await post(account, newTag());
      return account;
    };
    const probe = await warmAccount();
    const dry = await withFault(undefined, () => post(probe, newTag()));
    expect(dry.result.status).toBe(201);
    const runs = runsOf(dry.operations.map((_, i) => i + 1));
    // A few positions at once, each the second deal of an account of its own (as the dry run was).
    await sweepPositions(runs, async ({ mode, at }) => {
      const account = await warmAccount();
      const tag = newTag();
      const label = `deal ${mode} at call ${at} of ${dry.operations.join(',')}`;
      const first = await withFault({ at, mode }, () => post(account, tag));
      expect([201, 503], label).toContain(first.result.status);
      const landed = (await contactOf(account, tag)) !== undefined;
      if (first.result.status === 503) {
        const retry = await post(account, tag);
        expect(retry.status, label).toBe(201);
        expect(retry.headers.get('idempotent-replayed') === 'true', label).toBe(landed);
      }
      expect(await contactOf(account, tag), label).toBeDefined();
      // One deal of the tag: every deal of the account read (its partition, as stored).
      const deals = await queryAll({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': dealIndex.index.keys.itemPartitions(account.accountId)[0] },
        ConsistentRead: true,
      });
      const mine = deals.filter((d) => (d.contact as { email: string }).email === `${tag}@deals.test`);
      expect(mine, label).toHaveLength(1);
    });
    expect(runs.length).toBeGreaterThanOrEqual(8);
  });
});
