import { ensureTable, startDynamoDbLocal } from '#infra/local/dynamodb-local.ts';

/**
 * `npm run bench [-- --quick]`: starts its own in-memory DynamoDB Local, then runs the suite (bench/suite.ts)
 * against it: DynamoDB floor, every endpoint in-process, list scaling at 1k/10k/100k tickets (--quick stops at
 * 10k), HTTP load through the local gateway, deals (bench/deal-suite.ts), events (bench/event-suite.ts), cold
 * start, memory. Prints a table and writes bench/runs/results.json. `-- --deals`: the floor and the deals only,
 * to bench/runs/results-deals.json; `-- --events`: the floor and the events only, to bench/runs/results-events.json;
 * `-- --webhooks`: the webhook dispatcher only (bench/webhook-suite.ts), to bench/runs/results-webhooks.json.
 * bench/runs/ is git-ignored: `npm run bench:publish` makes a run's files the committed ones docs/ cite.
 * `-- --capacity`: every item each kind of change writes, its real size and write units (bench/capacity.ts), to
 * bench/runs/results-capacity.json; `-- --contention [--seconds N] [--numbered-from N] [--writers N]`: one account's goodput at 16 and 64
 * concurrent writers, as DynamoDB Local is and with DynamoDB's transaction conflicts given back
 * (bench/contention.ts; `--numbered-from`: its tickets numbered from N, as a large account's), to
 * bench/runs/results-contention.json (docs/capacity.md quotes both; never published).
 * `-- --event-places [--seconds N]`: events/s into one account, writes on its hottest item and partition, and
 * what feed pages cost (bench/event-places.ts; BENCH_ROOT=<checkout> runs another checkout's lib/ for a before
 * figure), to bench/runs/results-event-places.json (docs/capacity.md quotes it; never published).
 * `-- --reindex [--quick]`: what `tickets reindex` costs per ticket (bench/reindex.ts), to
 * bench/runs/results-reindex.json (docs/capacity.md quotes it; never published).
 * `-- --messages [--quick]`: a message's create and a conversation page at 10, 1,000 and 10,000 messages
 * (bench/messages.ts), to bench/runs/results-messages.json (docs/capacity.md quotes it; never published).
 * `-- --authorizer [--root DIR] [--keys N]`: the API key authorizer on a cache miss (bench/authorizer.ts): store
 * calls, round trips and latency, of this checkout or of the one at DIR (docs/api-keys.md quotes this one's).
 * `-- --sla`: breach latency (due time → breach) for 1,000 tickets due within one minute, and a breach's store
 * calls (bench/sla.ts), to bench/runs/results-sla.json (docs/capacity.md quotes it; never published).
 * `-- --email [--quick]`: what a received mail costs the store, mails processed per second through npm start's
 * SMTP server, and SMTP 250 to message p50/p99 (bench/email.ts), to bench/runs/results-email.json
 * (docs/capacity.md and docs/email.md quote it; never published).
 * `-- --email-large [--quick]`: ten ~25 MB mails at once and ~5 MB mails through npm start's SMTP server: the
 * service's peak RSS and mails processed per second (bench/email-large.ts), to bench/runs/results-email-large.json;
 * with `--text`, ~25 MB text mails instead (one, then four at once), to bench/runs/results-email-text.json.
 * `-- --trash [--quick]`: a delete and a restore of a ticket with 100 messages, and the purge's throughput
 * (bench/trash.ts), to bench/runs/results-trash.json (docs/capacity.md quotes it; never published).
 * `-- --erasure [--quick]`: the erasure of a person with 10, 100 and 1,000 tickets (bench/erasure.ts), to
 * bench/runs/results-erasure.json (docs/capacity.md quotes it; never published).
 * `-- --people [--quick]`: an agent list page at 100 and 1,000 agents, a team's queue page at 1k, 10k and 100k
 * tickets (--quick: to 10k), the write units of a hand-over and of a hand-back (bench/people.ts), to
 * bench/runs/results-people.json (docs/capacity.md quotes it; never published).
 * `-- --rules [--quick]`: a ticket create and update with 0, 100 and 1,000 active rules, and with one that fires
 * (bench/rules.ts), to bench/runs/results-rules.json (docs/rules.md quotes it; never published).
 * `-- --time-rules`: 10,000 tickets whose time rule falls due within one minute, fired by the due runner
 * (bench/time-rules.ts), to bench/runs/results-time-rules.json (docs/rules.md quotes it; never published).
 * `-- --backtest [--quick]`: a rule's backtest over a feed of 50,000 events (BACKTEST_BENCH_EVENTS; --quick 10,000):
 * one part of 5,000 items and the whole window part after part (bench/backtest.ts), to
 * bench/runs/results-backtest.json (docs/rules.md and docs/capacity.md quote it; never published).
 * `-- --sweep`: a rule write's moment sweep over SWEEP_BENCH_TICKETS (20,000) not-closed tickets of one account
 * (bench/sweep.ts), to bench/runs/results-sweep.json (docs/rules.md and docs/capacity.md quote it; never published).
 * `-- --search`: search words, rare to refused, over SEARCH_BENCH_TICKETS (100,000) tickets of one account
 * (bench/search.ts; docs/capacity.md, "Search", quotes it; prints only).
 * `-- --imports [--quick]`: a whole import of 1,000 and 10,000 tickets with 5 messages each (--quick: 1,000) from a
 * local file, as the admin CLI runs it (bench/imports.ts), to bench/runs/results-imports.json (docs/imports.md and
 * docs/capacity.md quote it; never published).
 */
const argAfter = (flag: string) =>
  process.argv.includes(flag) ? process.argv[process.argv.indexOf(flag) + 1] : undefined;
// The JVM's full JIT, as the test run's own stores: a bench's store serves for minutes (infra/local/dynamodb-local.ts).
const store = await startDynamoDbLocal({ port: 0, jit: 'full' });
try {
  process.env.DYNAMODB_ENDPOINT = store.endpoint;
  process.env.TABLE_NAME = 'deskpipe-bench';
  process.env.LOG_LEVEL = 'silent';
  await ensureTable(store.endpoint, process.env.TABLE_NAME);
  // Loaded once the environment is set: the data layer's client reads it when its module loads.
  const { runDealsOnly, runEventsOnly, runSuite } = await import('./suite.ts');
  const options = { quick: process.argv.includes('--quick'), endpoint: store.endpoint };
  if (process.argv.includes('--deals')) await runDealsOnly(options);
  else if (process.argv.includes('--events')) await runEventsOnly(options);
  else if (process.argv.includes('--capacity'))
    await (await import('./capacity.ts')).runCapacityOnly(options);
  else if (process.argv.includes('--contention'))
    await (await import('./contention.ts')).runContentionOnly({
      ...options,
      seconds: Number(argAfter('--seconds') ?? 10),
      numberedFrom: argAfter('--numbered-from') ? Number(argAfter('--numbered-from')) : undefined,
      writers: argAfter('--writers') ? Number(argAfter('--writers')) : undefined,
    });
  else if (process.argv.includes('--messages'))
    await (await import('./messages.ts')).runMessagesOnly(options);
  else if (process.argv.includes('--reindex')) await (await import('./reindex.ts')).runReindexOnly(options);
  else if (process.argv.includes('--authorizer'))
    await (await import('./authorizer.ts')).runAuthorizerOnly({
      root: argAfter('--root'),
      keys: argAfter('--keys') ? Number(argAfter('--keys')) : undefined,
    });
  else if (process.argv.includes('--event-places'))
    await (await import('./event-places.ts')).runEventPlacesOnly({
      seconds: Number(argAfter('--seconds') ?? 10),
    });
  else if (process.argv.includes('--email-large'))
    await (await import('./email-large.ts')).runEmailLargeOnly({
      ...options,
      text: process.argv.includes('--text'),
    });
  else if (process.argv.includes('--email')) await (await import('./email.ts')).runEmailOnly(options);
  else if (process.argv.includes('--sla')) await (await import('./sla.ts')).runSlaOnly(options);
  else if (process.argv.includes('--trash')) await (await import('./trash.ts')).runTrashOnly(options);
  else if (process.argv.includes('--people')) await (await import('./people.ts')).runPeopleOnly(options);
  else if (process.argv.includes('--rules')) await (await import('./rules.ts')).runRulesOnly(options);
  else if (process.argv.includes('--sweep')) await (await import('./sweep.ts')).runSweepOnly(options);
  else if (process.argv.includes('--search')) await (await import('./search.ts')).runSearchOnly(options);
  else if (process.argv.includes('--time-rules'))
    await (await import('./time-rules.ts')).runTimeRulesOnly(options);
  else if (process.argv.includes('--backtest'))
    await (await import('./backtest.ts')).runBacktestOnly(options);
  else if (process.argv.includes('--erasure')) await (await import('./erasure.ts')).runErasureOnly(options);
  else if (process.argv.includes('--imports')) await (await import('./imports.ts')).runImportsOnly(options);
  else if (process.argv.includes('--webhooks'))
    await (await import('./webhook-suite.ts')).runWebhooksOnly(options);
  else await runSuite(options);
} finally {
  await store.stop();
}
