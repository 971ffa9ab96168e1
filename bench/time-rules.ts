import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { handler as createRule } from '#functions/rules-create.ts';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import { withNextMoment } from '#lib/rules/in-change.ts';
import { PASS_CONCURRENCY, PASS_LIMIT, runBreaches } from '#lib/tickets/breaches.ts';
import { parseTimestamp } from '#lib/time.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';
import { benchAccount } from './lib/account.ts';
import { expectStatus, log } from './lib/measure.ts';
import { RUNS } from './lib/part.ts';
import { machineUnderLoad, percentile, round } from './lib/stats.ts';
import { origin, StoreCalls } from './lib/store-calls.ts';

/**
 * `npm run bench -- --time-rules` (docs/rules.md, "Time rules at their moment", quotes it; never published): the
 * contract's "10,000 tickets due in one minute fired within 60 s". One account, a time rule (`created_at` + 1 minute,
 * a tag), and TICKETS tickets created within one whole minute so that their moments all fall due at the next but one
 * (each moment is its creation + 1 minute rounded up to the whole minute): the runner's worst case. The tickets are
 * seeded as their creates compose them, with their next moment as a create computes it (withNextMoment), their own
 * items only (test/support/ticket-seeder.ts, entitiesOnly: the runner reads the due index and the tickets). Then the
 * runner as `npm start` runs it (runBreaches on every due shard) until every ticket fired: latency from each moment
 * to its commit, and the runner's store calls a firing (`TIME_RULES_BENCH_PURPOSES=1`: also its 8 kinds of call that
 * took the store longest). To bench/runs/results-time-rules.json. It asserts nothing.
 */
const TICKETS = Number(process.env.TIME_RULES_BENCH_TICKETS ?? 10_000);
const MINUTE_MS = 60_000;
/** Time for the seeding before the tickets' creation minute begins (their moment is two minutes after it begins). */
const LEAD_MS = 30_000;
/** The runner's tickets at once and a pass (TIME_RULES_BENCH_CONCURRENCY, _LIMIT; default: the runner's own). */
const RUNNER = {
  concurrency: Number(process.env.TIME_RULES_BENCH_CONCURRENCY ?? 0) || PASS_CONCURRENCY,
  limit: Number(process.env.TIME_RULES_BENCH_LIMIT ?? 0) || PASS_LIMIT,
};

export async function runTimeRulesOnly(_options: { endpoint: string }) {
  const account = await benchAccount(`bench-time-rules-${Date.now()}`);
  const caller = callerOf(account);
  const rule = {
    name: 'A minute old',
    on: 'time',
    time: { after_minutes: 1, since: 'created_at' },
    conditions: { all: [{ field: 'status', op: 'is', value: 'open' }] },
    actions: [{ type: 'add_tags', tags: ['a-minute-old'] }],
  };
  await expectStatus(
    createRule(proxyEvent({ method: 'POST', path: '/api/rules', caller, body: rule }), lambdaContext),
    201,
  );
  const [config, rules] = await Promise.all([
    getAccountConfig(account.accountId),
    getActiveRules(account.accountId),
  ]);
  if (!config) throw new Error('time rules bench: no account');
  // Created within one whole minute (just after its start, before its end), at least LEAD_MS from now: every
  // creation + 1 minute rounds up to the same whole minute, so all TICKETS fall due at one moment, the runner's worst
  // case (the contract's "due in one minute" at its hardest).
  const startUs = Math.ceil((Date.now() + LEAD_MS) / MINUTE_MS) * MINUTE_MS * 1000 + 1000;
  log(`seeding ${TICKETS} tickets created within one minute, a time rule due at the same moment for all`);
  const seeded = await seedTickets(
    account.accountId,
    Array.from({ length: TICKETS }, (_, i) => ({
      subject: `T ${i}`,
      description: 'd',
      requester_email: `r${i}@bench.example`,
    })),
    {
      entitiesOnly: true,
      createdUs: (i) => startUs + Math.floor((i * MINUTE_MS * 1000) / TICKETS),
      shape: (ticket) => withNextMoment(ticket, rules, config),
    },
  );
  const momentOf = new Map(
    seeded.map((t) => [orderKeyOfUuid(t.uuid) as string, parseTimestamp(t.ruleDueAt as string) / 1000]),
  );
  const moments = [...new Set(momentOf.values())].sort((a, b) => a - b);
  log(`moments: ${moments.map((m) => new Date(m).toISOString()).join(', ')}; running the runner`);
  // No consumed capacity asked: DynamoDB Local would work it out under the lock the runner's commits wait on.
  const calls = new StoreCalls(dynamo, { readUnits: false });
  const latencies: number[] = [];
  let firings = 0;
  calls.start();
  const loadBefore = loadavg()[0] ?? 0;
  const totals = await origin.run('runner', () =>
    runBreaches((moments.at(-1) ?? Date.now()) + 3 * MINUTE_MS, {
      ...RUNNER,
      stopped: () => latencies.length >= TICKETS,
      onRules: (_account, orderKey, fired) => {
        firings += fired;
        const moment = momentOf.get(orderKey);
        if (moment !== undefined) latencies.push(Date.now() - moment);
      },
    }),
  );
  const tallies = calls.stop().get('runner') ?? new Map();
  if (process.env.TIME_RULES_BENCH_PURPOSES)
    for (const [purpose, t] of [...tallies].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8))
      log(
        `  ${purpose}: ${t.calls} calls, ${t.itemsWritten} written, ${t.itemsRead} read, ${Math.round(t.ms)} ms`,
      );
  latencies.sort((a, b) => a - b);
  const per = (field: 'itemsWritten' | 'writeUnits' | 'itemsRead' | 'calls') =>
    round([...tallies.values()].reduce((sum, t) => sum + t[field], 0) / Math.max(1, latencies.length), 2);
  const results = {
    mode: 'time-rules',
    runner: RUNNER,
    machine: machineUnderLoad(loadBefore),
    tickets: TICKETS,
    moments: moments.map((m) => new Date(m).toISOString()),
    // How many fell due at each moment: the runner's worst case is all at one.
    dueAt: Object.fromEntries(
      moments.map((m) => [new Date(m).toISOString(), [...momentOf.values()].filter((v) => v === m).length]),
    ),
    fired: latencies.length,
    firings,
    passes: totals.passes,
    failedPasses: totals.failures,
    latencyMs: {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? null,
      min: latencies[0] ?? null,
    },
    perFiring: {
      calls: per('calls'),
      itemsWritten: per('itemsWritten'),
      writeUnits: per('writeUnits'),
      itemsRead: per('itemsRead'),
    },
  };
  mkdirSync(RUNS, { recursive: true });
  writeFileSync(join(RUNS, 'results-time-rules.json'), `${JSON.stringify(results, null, 2)}\n`);
  log(JSON.stringify(results, null, 2));
}
