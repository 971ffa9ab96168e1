import { handler as listTickets } from '#functions/tickets-list.ts';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { keyedTerm } from '#lib/data/index/keyed.ts';
import { sampledTerm } from '#lib/data/index/term-sample.ts';
import { orderKeys } from '#lib/data/keys.ts';
import { batchPutAll, dynamo } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { figuresOf, instrument } from '#test/support/dynamo-figures.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { SEED, TicketSeeder } from './lib/seed.ts';
import { median, round } from './lib/stats.ts';

/**
 * `npm run bench -- --search` (docs/capacity.md, "Search", quotes it): what a search word costs, above all one
 * refused for matching too much (issue 40: decided from the terms' sample, lib/data/index/term-sample.ts, not after
 * reading its share of the read budget). Two accounts, each word RUNS times after a warm-up, in-process: its
 * answer, round trips, items read, read units and milliseconds (medians). It asserts nothing.
 * - Tickets: SEARCH_BENCH_TICKETS (default 20,000) seeded as the suite's scaling account is (bench/lib/seed.ts):
 *   words the budget allows, from rare to one letter, which the probe reads beside (its cost when it refuses nothing).
 * - Terms: what the terms partitions (and their sample) of an account hold for one word in N tickets, written
 *   directly (no ticket is read for a refused word, so none is written): `alpha` in 200,000 tickets, which the
 *   sample refuses, and `bravo` in 120,000, refused by its reads (the sample's count is below its refusal there).
 */
const TICKETS = Number(process.env.SEARCH_BENCH_TICKETS ?? 20_000);
const RUNS = 15;

const ACCEPTED: [string, string][] = [
  [SEED.rareWord, 'a rare word (5 tickets)'],
  ['billing', 'a subject word (1 ticket in 8)'],
  ['s', 'one letter (every shard)'],
];
const REFUSED: [string, number][] = [
  ['alpha', 200_000],
  ['bravo', 120_000],
];

export async function runSearchOnly(_options: { endpoint: string }) {
  instrument(dynamo);
  const account = await benchAccount(`bench-search-${Date.now()}`);
  const config = await loadAccountConfig(account.accountId);
  if (!config) throw new Error('bench account missing');
  const seeded = await new TicketSeeder(account.accountId, config).seedTo(TICKETS);
  log(`search: ${TICKETS} tickets seeded in ${round(seeded, 1)} s`);
  for (const [word, what] of ACCEPTED) await measure(account, word, what);

  const terms = await benchAccount(`bench-search-terms-${Date.now()}`);
  for (const [word, count] of REFUSED) {
    const started = performance.now();
    const written = await writeTerms(terms.accountId, word, count);
    log(
      `search: ${count} terms of ${word} (${written} in the sample) in ${round((performance.now() - started) / 1000, 1)} s`,
    );
  }
  for (const [word, count] of REFUSED) await measure(terms, word, `a word of ${count} tickets`);
}

/** A word's term items (and their sampled copies) for tickets 1 to `count`, as creates would have put them. */
async function writeTerms(accountId: string, word: string, count: number): Promise<number> {
  const { keys, types } = tickets.index;
  const keyed = keyedTerm(accountId, word);
  let sampled = 0;
  const items: Record<string, unknown>[] = [];
  for (let number = 1; number <= count; number++) {
    const orderKey = orderKeys.of(1_767_225_600_000_000 + number * 1_000, number);
    items.push({ ...keys.prefixTerm(accountId, keyed, orderKey), type: types.term });
    if (sampledTerm(number, word)) {
      items.push({ ...keys.sampleTerm(accountId, keyed, orderKey), type: types.term });
      sampled++;
    }
  }
  for (let i = 0; i < items.length; i += 25 * 16) {
    const group = items.slice(i, i + 25 * 16);
    await Promise.all(
      Array.from({ length: 16 }, (_, g) => group.slice(g * 25, g * 25 + 25)).map(batchPutAll),
    );
  }
  return sampled;
}

async function measure(account: Awaited<ReturnType<typeof benchAccount>>, word: string, what: string) {
  const search = () =>
    listTickets(
      proxyEvent({ path: '/api/tickets', caller: callerOf(account), query: { search: word } }),
      lambdaContext,
    ) as Promise<{ statusCode: number }>;
  for (let i = 0; i < 3; i++) await search();
  const runs: { ms: number; status: number; roundTrips: number; itemsRead: number; capacity: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    let status = 0;
    const figures = await figuresOf(async () => {
      status = (await search()).statusCode;
    });
    runs.push({ ms: performance.now() - started, status, ...figures });
  }
  const of = (k: 'ms' | 'roundTrips' | 'itemsRead' | 'capacity') => round(median(runs.map((r) => r[k])), 1);
  log(
    `  search=${word.padEnd(8)} ${what.padEnd(32)} ${[...new Set(runs.map((r) => r.status))].join('/')}  p50 ${of('ms')} ms  RT ${of('roundTrips')}  read ${of('itemsRead')} items (${of('capacity')} RU)`,
  );
}
