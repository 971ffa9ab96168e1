import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { dynamo } from '#lib/data/store/client.ts';
import { runBreaches } from '#lib/tickets/breaches.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import { atTime } from '#test/support/clock.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { RUNS } from './lib/part.ts';
import { percentile, round } from './lib/stats.ts';
import { origin, StoreCalls } from './lib/store-calls.ts';

/**
 * `npm run bench -- --sla`: breach latency (due time → the breach committed with its event) for TICKETS tickets
 * whose first-reply clocks fall due within one minute, one runner on every due shard as `npm start` and the
 * deployed function run it (lib/tickets/breaches.ts), and what the runner's store calls cost per breach (items and
 * write units of a breach commit, reads). Writes bench/runs/results-sla.json. docs/capacity.md quotes it.
 */
const TICKETS = Number(process.env.SLA_BENCH_TICKETS ?? 1_000);
const WINDOW_MS = 60_000;
/** Time left for the creates before the first due time. */
const LEAD_MS = 60_000;

export async function runSlaOnly(_options: { endpoint: string }) {
  const account = await benchAccount(`bench-sla-${Date.now()}`, {
    sla_policies: [{ name: 'Reply fast', first_reply_minutes: 1 }],
  });
  const firstDueMs = Date.now() + LEAD_MS;
  log(`creating ${TICKETS} tickets due over one minute from ${new Date(firstDueMs).toISOString()}`);
  const dueOf = new Map<string, number>();
  let next = 0;
  const create = async () => {
    for (let i = next++; i < TICKETS; i = next++) {
      // created_at one minute before its due time: first reply due at firstDueMs + i × (WINDOW / TICKETS).
      const dueMs = firstDueMs + Math.floor((i * WINDOW_MS) / TICKETS);
      const createdUs = (dueMs - 60_000) * 1000;
      const ticket = await atTime(createdUs / 1000, () =>
        createTicket(account.accountId, {
          subject: `Due ${i}`,
          description: 'd',
          requester_email: `r${i}@example.com`,
        }),
      );
      dueOf.set(ticket.uuid, dueMs);
    }
  };
  // One at a time: the clock set for a create is the process's.
  await create();
  if (Date.now() > firstDueMs)
    throw new Error('the creates took longer than the lead: lower SLA_BENCH_TICKETS');
  log(`created in ${round((Date.now() - (firstDueMs - LEAD_MS)) / 1000, 1)} s; running the breach runner`);

  const calls = new StoreCalls(dynamo);
  const latencies: number[] = [];
  calls.start();
  const until = firstDueMs + WINDOW_MS + 60_000;
  const totals = await origin.run('runner', () =>
    runBreaches(until, {
      stopped: () => latencies.length >= TICKETS,
      onBreach: (_account, uuid) => {
        const due = dueOf.get(uuid);
        if (due !== undefined) latencies.push(Date.now() - due);
      },
    }),
  );
  const tallies = calls.stop().get('runner') ?? new Map();
  latencies.sort((a, b) => a - b);
  const perBreach = (field: 'itemsWritten' | 'writeUnits' | 'itemsRead' | 'readUnits' | 'calls') =>
    round([...tallies.values()].reduce((sum, t) => sum + t[field], 0) / Math.max(1, latencies.length), 2);
  const byPurpose = Object.fromEntries(
    [...tallies].map(([purpose, t]) => [
      purpose,
      {
        calls: t.calls,
        itemsWritten: t.itemsWritten,
        writeUnits: round(t.writeUnits, 1),
        itemsRead: t.itemsRead,
      },
    ]),
  );
  const results = {
    startedAt: new Date(firstDueMs - LEAD_MS).toISOString(),
    mode: 'sla',
    machine: { cpus: cpus().length, memoryGb: round(totalmem() / 2 ** 30, 1), node: process.version },
    tickets: TICKETS,
    windowMs: WINDOW_MS,
    breached: latencies.length,
    passes: totals.passes,
    failedPasses: totals.failures,
    latencyMs: {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? null,
      min: latencies[0] ?? null,
    },
    perBreach: {
      calls: perBreach('calls'),
      itemsWritten: perBreach('itemsWritten'),
      writeUnits: perBreach('writeUnits'),
      itemsRead: perBreach('itemsRead'),
      readUnits: perBreach('readUnits'),
    },
    byPurpose,
  };
  mkdirSync(RUNS, { recursive: true });
  writeFileSync(join(RUNS, 'results-sla.json'), `${JSON.stringify(results, null, 2)}\n`);
  log(JSON.stringify(results, null, 2));
}
