import { describe, expect, it } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { type FaultMode, sweepPositions, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { endClaim } from '#test/support/idempotency.ts';
import {
  checkFilter,
  type Filter,
  fetchAll,
  type Mismatch,
  queryOf,
  type Shown,
  sentFilter,
} from '#test/support/list-model.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * The store calls of a heavy PATCH (status, assignee, subject and 16 of 50 custom fields at once; or a status and
 * 20 fields) fail in turn, before reaching the store or after it did
 * its work: calls 1–8 (the key's claim, the rate count, the reads, the marked puts; 6–8 for the second, whose
 * first calls are the first's) and the last two (the commit and what follows it); then the retry with the same
 * Idempotency-Key. After each: every combined filter over the ticket's old and
 * new values answers what GET of every ticket says.
 */
const gateway = useGateway();
/**
 * The checks' reads (every ticket's GET, the filters' pages: ~4,500 requests in the file) through a gateway of their
 * own whose authorizer answers are cached, as API Gateway caches them: each read is one authorizer run fewer (its
 * key read) and nothing else changes. The PATCHes, whose calls the faults count and fail, go through `gateway`,
 * which authorizes every request.
 */
const reader = useGateway(300);
// The service's clock stands still: a dry run and the faulted run after it make the same calls whatever the
// machine's load (the rules cache's freshness check, a GetItem once 5 s have passed, would shift the positions).
useManualClock({ lazy: true });
const MODES: FaultMode[] = ['lost-request', 'lost-answer'];

function filtersAround(t: Shown, agents: number[]): Filter[] {
  const cf = Object.entries(t.custom_fields).map(([k, v]): [string, string] => [
    k,
    typeof v === 'string' ? v : JSON.stringify(v),
  ]);
  // Three of the fields (the first, one the rounds rewrite, the last): each in seven combinations, before and after.
  const some = [cf[0], cf[19], cf[cf.length - 1]].filter(Boolean) as [string, string][];
  const out: Filter[] = [];
  for (const c of some) {
    out.push({ status: t.status, custom_fields: [c] });
    out.push({ priority: t.priority, custom_fields: [c] });
    out.push({ status: t.status, priority: t.priority, custom_fields: [c] });
    out.push({ requester_email: t.requester.email, custom_fields: [c] });
    if (t.assignee) out.push({ assignee_id: t.assignee.id, custom_fields: [c] });
    out.push({ search: t.subject.split(' ').pop() as string, custom_fields: [c] });
    out.push({ custom_fields: [c, ['plan', 'gold']] });
  }
  out.push({ status: t.status, requester_email: t.requester.email });
  out.push({ search: 'w29', status: t.status });
  for (const a of agents)
    out.push(
      { assignee_id: a, custom_fields: [['plan', 'gold']] },
      { assignee_id: a, status: t.status, search: 'printer' },
    );
  return out;
}

/**
 * The filters, each at 100 or 1 a page by its place, with every query sent twice left out: around a ticket the
 * PATCH did not change (a fault before its commit), the filters before and after are the same ones, and some
 * coincide when it did (the agents' filters, a status kept). A filter that falls at both sizes is checked at both.
 */
function distinctQueries(filters: Filter[]): [Filter, number][] {
  const queries = new Map<string, [Filter, number]>();
  filters.forEach((f, i) => {
    const perPage = i % 2 ? 1 : 100;
    const query = queryOf(sentFilter(f), 1, perPage);
    if (!queries.has(query)) queries.set(query, [f, perPage]);
  });
  return [...queries.values()];
}

/** Round r's PATCH: a status and fields (with the assignee, priority and subject unless `big`). */
function bodyFor(r: number, big: boolean, agents: number[]) {
  return big
    ? {
        status: (['pending', 'in_progress', 'open', 'resolved'] as const)[r % 4],
        custom_fields: Object.fromEntries(
          Array.from({ length: 20 }, (_, j) => [`k${(j + r * 3) % 49}`, `r${r}-${j % 3}`]),
        ),
      }
    : {
        status: (['pending', 'in_progress', 'open', 'resolved'] as const)[r % 4],
        assignee_id: r % 3 === 2 ? null : agents[r % 2],
        priority: (['urgent', 'medium'] as const)[r % 2],
        subject: `${Array.from({ length: 30 }, (_, j) => `w${j}`).join(' ')} printer round${r}`,
        custom_fields: Object.fromEntries(
          Array.from({ length: 16 }, (_, j) => [
            `k${(j + r * 3) % 49}`,
            j % 5 === 0 ? null : `r${r}-${j % 3}`,
          ]),
        ),
      };
}

/**
 * An account of 12 tickets (every fourth heavy: 30-word subject, 50 custom fields), seeded as their creates write
 * them (test/support/ticket-seeder.ts); its key, agents and tickets.
 */
async function accountWithTickets() {
  const account = await createTestAccount({
    agents: [1, 2].map((i) => ({ email: `agent${i}@fu.test`, name: `Agent ${i}` })),
  });
  const agents = account.agents.map((a: { id: number }) => a.id);
  const words = Array.from({ length: 30 }, (_, j) => `w${j}`).join(' ');
  const bodies = Array.from({ length: 12 }, (_, i) => {
    const heavy = i % 4 === 0;
    return {
      subject: heavy ? `${words} printer t${i}` : `Printer t${i}`,
      description: 'd',
      requester_email: `r${i % 3}@fu.test`,
      priority: i % 2 ? 'high' : 'low',
      custom_fields: heavy
        ? {
            plan: 'gold',
            ...Object.fromEntries(Array.from({ length: 49 }, (_, j) => [`k${j}`, `v${j % 4}`])),
          }
        : { plan: i % 3 ? 'gold' : 'silver', k0: 'v0', k10: 'v2' },
    };
  });
  const uuids = (await seedTickets(account.accountId, bodies)).map((t) => t.uuid);
  return { account, key: account.apiKey, agents, uuids };
}

/** The ticket round r changes: the heavy ones in turn. */
const targetOf = (uuids: string[], r: number) => uuids[4 * (Math.floor(r / 2) % 3)] as string;

describe('a heavy update survives a failure of any of its store calls', () => {
  it.each([
    ['status, assignee, priority, subject and 16 custom fields', false],
    ['a status and 20 custom fields', true],
  ])(
    '%s: every combined filter agrees with GET after the fault and after the retry',
    async (_label, big) => {
      // The calls of the first PATCH of a heavy ticket, on an account of 12 tickets (its settings cached by the seed).
      const probe = await accountWithTickets();
      const dry = await withFault(undefined, () =>
        gateway.call('PATCH', `/api/tickets/${targetOf(probe.uuids, 0)}`, {
          key: probe.key,
          body: bodyFor(0, big, probe.agents),
          headers: { 'Idempotency-Key': 'dry-0' },
        }),
      );
      expect(dry.result.status, dry.result.text).toBe(200);
      const n = dry.operations.length;
      const runs = MODES.flatMap((mode) =>
        [...new Set(big ? [6, 7, 8, n - 1, n] : [1, 2, 3, 4, 5, 6, 7, 8, n - 1, n])].map((at) => ({
          mode,
          at,
        })),
      ).map((run, i) => ({ ...run, round: i + 1 }));
      const statuses: string[] = [];
      // A few positions at once, each the first PATCH of a heavy ticket on an account of its own (as the dry run).
      await sweepPositions(runs, async ({ mode, at, round }) => {
        const { account, key, agents, uuids } = await accountWithTickets();
        const target = targetOf(uuids, round);
        const mismatches: Mismatch[] = [];
        let before = (await fetchAll(reader, key, [target]))[0] as Shown;
        /** Every combined filter over the target's values now and at the last check agrees with GET of every ticket. */
        const checkAll = async (label: string) => {
          const model = await fetchAll(reader, key, uuids);
          const t = model.find((m) => m.uuid === target) as Shown;
          const filters = [...filtersAround(t, agents), ...filtersAround(before, agents)];
          before = t;
          await Promise.all(
            distinctQueries(filters).map(async ([f, perPage]) => {
              for (const m of await checkFilter(reader, key, model, f, perPage))
                mismatches.push({ ...m, query: `${label}: ${m.query}` });
            }),
          );
        };
        const label = `${mode} at ${at}`;
        const headers = { 'Idempotency-Key': `k-${round}` };
        const patch = () =>
          gateway.call('PATCH', `/api/tickets/${target}`, {
            key,
            body: bodyFor(round, big, agents),
            headers,
          });
        const first = await withFault({ at, mode }, patch);
        statuses.push(`${label}: ${first.result.status} (${first.operations[at - 1]})`);
        expect([200, 503, 409, 422], `${label} ${first.result.text}`).toContain(first.result.status);
        await checkAll(`${label} after fault`);
        if (first.result.status !== 200 && first.result.status !== 422) {
          // 409 while the faulted request's claim on the Idempotency-Key is still held.
          const retry = await waitFor(
            async () => {
              const answer = await patch();
              // The faulted request is gone: its claim's lease is ended instead of waited out (10 s).
              if (answer.status === 409) await endClaim(account.accountId, headers['Idempotency-Key']);
              return answer.status === 409 ? undefined : answer;
            },
            { timeout: 15_000, interval: 500, label: `${label}: the key's claim to end` },
          );
          expect(retry.status, `${label} retry ${retry.text}`).toBe(200);
          await checkAll(`${label} after retry`);
        }
        expect(mismatches, label).toEqual([]);
      });
      expect(statuses).toHaveLength(runs.length);
    },
    280_000,
  );
});

/**
 * What a write puts before its commit (a create's marked terms and postings; a heavy update's additions past 100
 * actions) is plain BatchWriteItems on items another transaction may hold: DynamoDB can refuse such a write with
 * TransactionConflictException. That is a conflict like the commit's own, decided again and retried, never a 500.
 */
describe('a conflict on a write before the commit', () => {
  const heavyBody = (tag: string) => ({
    subject: `${Array.from({ length: 30 }, (_, j) => `w${j}`).join(' ')} ${tag}`,
    description: 'd',
    requester_email: `${tag}@conflict.test`,
    custom_fields: Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`k${j}`, `${tag}${j}`])),
  });

  it('is retried on a create and on an update', async () => {
    const { apiKey: key } = await createTestAccount();
    // Warm (the account's settings are read once, then cached): the dry run counts the calls the next one makes.
    expect((await gateway.call('POST', '/api/tickets', { key, body: heavyBody('warm') })).status).toBe(201);
    const dry = await withFault(undefined, () =>
      gateway.call('POST', '/api/tickets', { key, body: heavyBody('dry') }),
    );
    expect(dry.result.status, dry.result.text).toBe(201);
    // Its marked puts (BatchWriteItem) go beside its block keys' UpdateItems, in no fixed order: the first of them.
    const commitAt = dry.operations.lastIndexOf('TransactWriteItems');
    expect(dry.operations.lastIndexOf('BatchWriteItem', commitAt)).toBeGreaterThan(0);

    const created = await withFault({ operation: 'BatchWriteItem', mode: 'conflict' }, () =>
      gateway.call('POST', '/api/tickets', { key, body: heavyBody('hot') }),
    );
    expect(created.operations).toContain('BatchWriteItem');
    expect(created.result.status, created.result.text).toBe(201);
    const uuid = created.result.body.ticket.uuid;
    const listed = await gateway.call('GET', '/api/tickets?custom_fields[k49]=hot49&status=open', { key });
    expect(listed.body.data.map((t: { uuid: string }) => t.uuid)).toEqual([uuid]);
    const searched = await gateway.call('GET', '/api/tickets?search=w29%20hot', { key });
    expect(searched.body.data.map((t: { uuid: string }) => t.uuid)).toEqual([uuid]);

    // 20 fields: their removals and counters fill the commit, their new postings go before it, marked.
    const change = {
      status: 'pending',
      custom_fields: Object.fromEntries(Array.from({ length: 20 }, (_, j) => [`k${j}`, `new${j}`])),
    };
    const dryPatch = await withFault(undefined, () =>
      gateway.call('PATCH', `/api/tickets/${dry.result.body.ticket.uuid}`, { key, body: change }),
    );
    expect(dryPatch.result.status, dryPatch.result.text).toBe(200);
    const patchCommitAt = dryPatch.operations.lastIndexOf('TransactWriteItems');
    const patchMarkedAt = dryPatch.operations.lastIndexOf('BatchWriteItem', patchCommitAt) + 1;
    expect(patchMarkedAt).toBeGreaterThan(1);
    const updated = await withFault({ at: patchMarkedAt, mode: 'conflict' }, () =>
      gateway.call('PATCH', `/api/tickets/${uuid}`, { key, body: change }),
    );
    expect(updated.operations[patchMarkedAt - 1]).toBe('BatchWriteItem');
    expect(updated.result.status, updated.result.text).toBe(200);
    const moved = await gateway.call('GET', '/api/tickets?custom_fields[k19]=new19&status=pending', { key });
    expect(moved.body.meta.total).toBe(2);
  });
});
