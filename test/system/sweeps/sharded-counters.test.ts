import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deals } from '#lib/data/deals/deal-index.ts';
import { getDealStats } from '#lib/data/deals/deals.ts';
import type { IndexedEntity } from '#lib/data/index/engine.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { entityOf } from '#lib/data/store/items.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { getTicketStats } from '#lib/data/tickets/tickets.ts';
import type { Deal } from '#lib/deals/types.ts';
import { addDecimal } from '#lib/decimal.ts';
import { isOpenWork, type Ticket } from '#lib/tickets/types.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { cancelConflictingTransactions } from '#test/support/transaction-conflicts.ts';

/**
 * Sharded counters under a fault sweep (issue 27): ticket and deal creates and updates (status, priority,
 * assignee; stage, amount, status), least-busy assignment on, with a fault (the request lost, the answer lost:
 * at every call position in turn; a transaction conflict: at every commit), each retried with its Idempotency-Key when it answered
 * 503. After each: every total the lists answer (each dimension any ticket or deal was ever in: the sum of its
 * shards), each agent's open work (least-busy's count) and the board's counts and sums equal a recount from the
 * entities as stored. Then racing writers, with conflicts cancelled as DynamoDB cancels them.
 */
const gateway = useGateway();

const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
const tag = () => randomBytes(4).toString('hex');

const stages = ['Lead', 'Proposal', 'Closing'].map((name, i) => ({
  name,
  color: `#00000${i}`,
  probability: 10 * (i + 1),
}));

async function setUp() {
  const account = await createTestAccount({
    agents: [1, 2, 3].map((i) => ({ email: `agent${i}@shards.test`, name: `Agent ${i}` })),
    auto_assignment: { enabled: true, method: 'least_busy' },
    pipelines: [{ name: 'Sales', default: true, stages }],
  });
  const key = account.apiKey;
  const agents = account.agents.map((a: { id: number }) => a.id);
  const stageIds = (account.pipelines[0]?.stages ?? []).map((s: { id: number }) => s.id);
  const ticketUuids: string[] = [];
  const dealUuids: string[] = [];
  let n = 0;
  const send = (method: string, path: string, body: unknown, idem: string) =>
    gateway.call(method, path, { key, body, headers: { 'Idempotency-Key': idem } });
  /** The changes swept: each a request made with a fresh Idempotency-Key (the same one on its retry). */
  const changes = {
    'ticket create': () => {
      const i = n++;
      return {
        method: 'POST',
        path: '/api/tickets',
        body: {
          subject: `Printer ${i}`,
          description: 'd',
          requester_email: `r${i % 3}@shards.test`,
          priority: (['low', 'high', 'urgent'] as const)[i % 3],
          custom_fields: { plan: i % 2 ? 'gold' : 'silver' },
        },
      };
    },
    'ticket update': () => {
      const i = n++;
      return {
        method: 'PATCH',
        path: `/api/tickets/${ticketUuids[i % ticketUuids.length]}`,
        body: {
          status: (['pending', 'resolved', 'open', 'in_progress'] as const)[i % 4],
          priority: (['urgent', 'medium', 'low'] as const)[i % 3],
          assignee_id: i % 4 === 3 ? null : agents[i % agents.length],
          custom_fields: { plan: i % 3 ? 'gold' : 'bronze' },
        },
      };
    },
    'deal create': () => {
      const i = n++;
      return {
        method: 'POST',
        path: '/api/deals',
        body: {
          name: `Deal ${i}`,
          amount: `${i}.${i % 10}5`,
          currency: i % 2 ? 'EUR' : 'USD',
          contact_email: `c${i % 2}@shards.test`,
          contact_first_name: 'C',
        },
      };
    },
    'deal update': () => {
      const i = n++;
      return {
        method: 'PATCH',
        path: `/api/deals/${dealUuids[i % dealUuids.length]}`,
        body: {
          stage_id: stageIds[i % stageIds.length],
          amount: `${i % 7}.${i % 10}1`,
          ...(i % 5 === 4 ? { status: 'won' } : i % 5 === 3 ? { status: 'open' } : {}),
        },
      };
    },
  };
  const run = async (kind: keyof typeof changes) => {
    const { method, path, body } = changes[kind]();
    const idem = `idem-${tag()}`;
    return { response: await send(method, path, body, idem), retry: () => send(method, path, body, idem) };
  };
  const remember = (kind: string, body: { ticket?: { uuid: string }; data?: { uuid: string } }) => {
    if (kind === 'ticket create') ticketUuids.push(body.ticket?.uuid as string);
    if (kind === 'deal create') dealUuids.push(body.data?.uuid as string);
  };
  // A few of each before the sweep, so that updates have something to change.
  for (const kind of ['ticket create', 'deal create'] as const) {
    for (let i = 0; i < 3; i++) {
      const { response } = await run(kind);
      expect(response.status, response.text).toBe(201);
      remember(kind, response.body);
    }
  }
  return { account, run, remember, changes };
}

/** Entities as stored, every one. */
async function stored<E>(entity: IndexedEntity<E & { uuid: string }, unknown>, accountId: string) {
  const pages = await Promise.all(
    entity.index.keys.itemPartitions(accountId).map((pk) =>
      queryAll({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    ),
  );
  return pages.flat().map((item) => entityOf<E>(item));
}

/** Every dimension a ticket or deal has been in during the test (a total that fell to 0 is checked too). */
const everSeen = new Map<string, Set<string>>();

/**
 * Each dimension's total of an entity equals a recount of the stored entities, for every dimension they have been
 * in during the test (`everSeen`, per entity and account: a total that fell to 0 is checked too).
 */
async function expectDimensionTotals<E>(
  entity: IndexedEntity<E & { uuid: string }, unknown>,
  all: E[],
  accountId: string,
  label: string,
) {
  const recount = new Map<string, number>();
  for (const e of all) {
    for (const d of entity.index.dimensionsOf(accountId, e as E & { uuid: string }))
      recount.set(d, (recount.get(d) ?? 0) + 1);
  }
  const key = `${entity.index.declaration.entity}#${accountId}`;
  const seen = everSeen.get(key) ?? new Set<string>();
  for (const d of recount.keys()) seen.add(d);
  everSeen.set(key, seen);
  const totals = await entity.counts(accountId, [...seen]);
  for (const d of seen) expect(totals[d], `${label} ${d}`).toBe(recount.get(d) ?? 0);
}

async function expectTotalsEqualRecount(accountId: string, label: string) {
  // Tickets: each dimension's total, and each agent's open work.
  const allTickets = await stored<Ticket>(tickets as never, accountId);
  await expectDimensionTotals(tickets as never, allTickets, accountId, `${label}: tickets`);
  const busy: Record<string, number> = {};
  for (const t of allTickets) {
    if (t.assignee && isOpenWork(t)) busy[t.assignee.id] = (busy[t.assignee.id] ?? 0) + 1;
  }
  const { busy: kept } = await getTicketStats(accountId);
  expect(
    Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== 0)),
    `${label}: open work per agent`,
  ).toEqual(busy);

  // Deals: each dimension's total, and the board's counts and exact sums.
  const allDeals = await stored<Deal>(deals as never, accountId);
  await expectDimensionTotals(deals as never, allDeals, accountId, `${label}: deals`);
  const board: Record<string, Record<string, string>> = {};
  for (const d of allDeals) {
    for (const [name, counter] of Object.entries(deals.index.declaration.statsCounters ?? {})) {
      for (const [value, amount] of Object.entries(counter.adds(d))) {
        const cells = board[name] ?? {};
        cells[value] = addDecimal(cells[value] ?? '0', amount);
        board[name] = cells;
      }
    }
  }
  const { counters } = await getDealStats(accountId);
  const nonZero = (cells: Record<string, number | string> | undefined) =>
    Object.fromEntries(
      Object.entries(cells ?? {})
        .filter(([, v]) => Number(v) !== 0)
        .map(([k, v]) => [k, Number(v)]),
    );
  for (const name of Object.keys(deals.index.declaration.statsCounters ?? {})) {
    expect(nonZero(counters[name]), `${label}: board ${name}`).toEqual(nonZero(board[name]));
  }
}

describe('Sharded counters under a fault sweep', () => {
  it.each(['ticket create', 'ticket update', 'deal create', 'deal update'] as const)(
    '%s: every total equals a recount after a fault at every call position',
    async (kind) => {
      const { account, run, remember } = await setUp();
      const dry = await withFault(undefined, () => run(kind));
      expect(dry.result.response.status, dry.result.response.text).toBeLessThan(300);
      remember(kind, dry.result.response.body);
      const positions = dry.operations.length;
      expect(positions).toBeGreaterThanOrEqual(3);
      let exercised = 0;
      for (const mode of MODES) {
        for (let at = 1; at <= positions; at++) {
          // DynamoDB answers TransactionConflict where a transaction holds an item: on the commit, never on a
          // read, nor on the sequences item's plain updates (the rate count, the event places), which no
          // transaction holds.
          if (mode === 'conflict' && dry.operations[at - 1] !== 'TransactWriteItems') continue;
          const label = `${kind} ${mode} at call ${at} of ${dry.operations.join(',')}`;
          const first = await withFault({ at, mode }, () => run(kind));
          const { response, retry } = first.result;
          expect([200, 201, 503], `${label}: ${response.text}`).toContain(response.status);
          await expectTotalsEqualRecount(account.accountId, `${label}, after the fault`);
          let done = response;
          if (response.status === 503) {
            done = await retry();
            expect(done.status, `${label}: retry ${done.text}`).toBeLessThan(300);
            await expectTotalsEqualRecount(account.accountId, `${label}, after the retry`);
          }
          remember(kind, done.body);
          exercised++;
        }
      }
      const commits = dry.operations.filter((o) => o === 'TransactWriteItems').length;
      expect(commits).toBeGreaterThanOrEqual(1);
      expect(exercised).toBe(positions * 2 + commits);
    },
    300_000,
  );

  it('racing writers: 20 concurrent changes at a time, conflicts cancelled as DynamoDB does, leave totals = recount', async () => {
    const { account, run, remember } = await setUp();
    const wrapper = cancelConflictingTransactions();
    try {
      const kinds = ['ticket create', 'ticket update', 'deal create', 'deal update'] as const;
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const kind = kinds[(i + round) % kinds.length] as (typeof kinds)[number];
            const { response } = await run(kind);
            return { kind, response };
          }),
        );
        for (const { kind, response } of answers) {
          // A change that ran out of retries answers 503; a claim of its key refused while a commit held it,
          // 409 (idempotency.ts): either way, whatever landed is counted, which the recount checks.
          expect([200, 201, 409, 503], response.text).toContain(response.status);
          if (response.status < 300) remember(kind, response.body);
        }
        expect(answers.filter((a) => a.response.status < 300).length).toBeGreaterThan(10);
        await expectTotalsEqualRecount(account.accountId, `round ${round}`);
      }
    } finally {
      wrapper.uninstall();
    }
  }, 300_000);
});
