import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { figuresOf } from '#test/support/dynamo-figures.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { TicketSeeder } from './lib/seed.ts';
import { round } from './lib/stats.ts';

/**
 * `npm run bench -- --reindex [--quick]`: the cost of `tickets reindex` (lib/data/index/reindex/) on accounts of
 * 1,000 and 10,000 tickets (--quick: 1,000) loaded by the bench's bulk loader, run twice each: the first run
 * also writes the account's directory of dimensions (the loader writes none), the second is a reindex of an index
 * that is already exact. Per ticket: round trips, items read and written, write units; and the most entities the
 * run held at once (its page size, 100). To bench/runs/results-reindex.json; docs/capacity.md quotes it.
 */
export async function runReindexOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-reindex.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => {
      const sizes = options.quick ? [1_000] : [1_000, 10_000];
      const runs = [];
      for (const size of sizes) {
        const account = await benchAccount(`bench-reindex-${size}`, {
          agents: Array.from({ length: 20 }, (_, i) => ({
            email: `agent${i}@reindex.bench`,
            name: `A ${i}`,
          })),
          auto_assignment: { enabled: true, method: 'round_robin' },
        });
        const config = await loadAccountConfig(account.accountId);
        if (!config) throw new Error('reindex account missing');
        await new TicketSeeder(account.accountId, config).seedTo(size);
        for (const run of ['first (writes the directory)', 'again (index exact)']) {
          const started = performance.now();
          let result: Awaited<ReturnType<typeof tickets.rebuild>> | undefined;
          const figures = await figuresOf(async () => {
            result = await tickets.rebuild(account.accountId);
          });
          const seconds = (performance.now() - started) / 1000;
          const perTicket = (n: number) => round(n / size, 2);
          const row = {
            tickets: size,
            run,
            seconds: round(seconds, 1),
            roundTripsPerTicket: perTicket(figures.roundTrips),
            itemsReadPerTicket: perTicket(figures.itemsRead),
            itemsWrittenPerTicket: perTicket(figures.itemsWritten),
            writeUnitsPerTicket: perTicket(figures.writeUnits),
            removed: result?.removed,
            peakEntitiesHeld: result?.peakHeld,
          };
          log(`  reindex ${JSON.stringify(row)}`);
          runs.push(row);
        }
      }
      return { reindex: runs };
    },
  });
}
