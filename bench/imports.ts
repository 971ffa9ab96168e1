import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImportCommand } from '#infra/admin/import-command.ts';
import { sampleHistory } from '#infra/local/sample-history.ts';
import { UPLOAD_DIR_VARIABLE } from '#lib/data/imports/uploads.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { RUNS } from './lib/part.ts';
import { machineUnderLoad, round } from './lib/stats.ts';
import { type CallTally, StoreCalls } from './lib/store-calls.ts';

/**
 * `npm run bench -- --imports [--quick]` (docs/imports.md, "Throughput", and docs/capacity.md, "Imports", quote it;
 * never published): a whole import, as `npm run admin -- import <account> --file FILE` runs it
 * (runImportCommand, the job `POST /api/imports` starts, read from a local upload: a source that answers at once),
 * of the sample history's generator (infra/local/sample-history.ts) at 1,000 and 10,000 tickets (`--quick`: 1,000),
 * 5 messages each, 3 teams, 4 agents, 10 organizations and 80 contacts before them, each size into a new account.
 * Prints tickets a second (the job's start to its end: the people's pages, every ticket page and every save), the
 * store's calls by operation, and the items and write units a ticket (the run's writes, people's and job's included,
 * over its tickets). To bench/runs/results-imports.json. It asserts nothing but that the job completed every ticket.
 * `IMPORT_BENCH_PURPOSES=1` also prints the 15 kinds of call that took the store longest (where the time goes:
 * docs/imports.md, "Throughput").
 */
export async function runImportsOnly(options: { quick?: boolean }) {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  const dir = await mkdtemp(join(tmpdir(), 'deskpipe-bench-imports-'));
  process.env[UPLOAD_DIR_VARIABLE] = join(dir, 'uploads');
  // No consumed capacity asked (the service never asks): DynamoDB Local works it out under its table lock, once an
  // item written, and this bench prints no read units (docs/imports.md, "Throughput").
  const calls = new StoreCalls(dynamo, { readUnits: false });
  const runs = [];
  try {
    for (const tickets of options.quick ? [1_000] : [1_000, 10_000]) {
      runs.push(await importOnce(tickets, dir, calls));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const results = { mode: 'imports', runs };
  mkdirSync(RUNS, { recursive: true });
  writeFileSync(join(RUNS, 'results-imports.json'), `${JSON.stringify(results, null, 2)}\n`);
  log(JSON.stringify(results, null, 2));
}

async function importOnce(tickets: number, dir: string, calls: StoreCalls) {
  const file = join(dir, `history-${tickets}.ndjson`);
  await writeFile(file, sampleHistory(tickets, 5));
  const { accountId } = await benchAccount(`bench-imports-${tickets}-${Date.now()}`);
  log(`importing ${tickets} tickets with 5 messages each`);
  const loadBefore = loadavg()[0] ?? 0;
  calls.start();
  const started = performance.now();
  const { import: job } = await runImportCommand(accountId, ['--file', file], {
    progress: { write: () => true },
    interrupted: () => false,
  });
  const seconds = (performance.now() - started) / 1000;
  const tallies = [...(calls.stop().get('other') ?? new Map<string, CallTally>())];
  const created = (job.counts as Record<string, { created?: number }>).tickets?.created ?? 0;
  if (job.status !== 'completed' || created !== tickets)
    throw new Error(`the import ended ${job.status} with ${created} of ${tickets} tickets created`);
  const sum = (field: keyof CallTally) => tallies.reduce((n, [, t]) => n + t[field], 0);
  const byOperation = tallies.reduce<Record<string, { calls: number; items: number }>>(
    (all, [purpose, t]) => {
      const op = purpose.split(/[ :]/)[0] as string;
      const seen = all[op] ?? { calls: 0, items: 0 };
      all[op] = { calls: seen.calls + t.calls, items: seen.items + t.itemsWritten };
      return all;
    },
    {},
  );
  if (process.env.IMPORT_BENCH_PURPOSES)
    for (const [purpose, t] of [...tallies].sort((a, b) => b[1].ms - a[1].ms).slice(0, 15))
      log(`  ${purpose}: ${t.calls} calls, ${t.itemsWritten} items, ${Math.round(t.ms)} ms`);
  const run = {
    tickets,
    messagesPerTicket: 5,
    machine: machineUnderLoad(loadBefore),
    seconds: round(seconds, 1),
    ticketsPerSecond: round(tickets / seconds, 1),
    perTicket: {
      calls: round(sum('calls') / tickets, 2),
      itemsWritten: round(sum('itemsWritten') / tickets, 1),
      writeUnits: round(sum('writeUnits') / tickets, 1),
      storeMs: round(sum('ms') / tickets, 1),
    },
    byOperation,
  };
  log(
    `${tickets} tickets in ${run.seconds} s: ${run.ticketsPerSecond} tickets/s, ` +
      `${run.perTicket.itemsWritten} items and ${run.perTicket.writeUnits} WU a ticket`,
  );
  return run;
}
