import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * `npm run bench -- --event-places [--seconds N]`: where one account's events take their places, and what a feed
 * page costs (docs/capacity.md, "Events feed"). W = 16 writers commit events of distinct objects into one account
 * for N seconds (default 10) through the data layer (takeEventPlaces, then the commit, as every change does); every
 * write the store receives is counted per item and per partition, with its write units (a put's size, 2 units a KB
 * in a transaction; an update of a counter item 1). Printed: events/s (DynamoDB Local's, on this machine), and
 * the writes and units per event on the hottest item and the hottest partition: at 2,000 events/s that is the
 * load on them on DynamoDB, whose limit is 1,000 units/s an item or partition. Then pages of the feed: after a
 * cursor in the middle (limit 100), and at the tail after one new event (limit 100, the page that must move the
 * lagging shards): round trips, requests, items read, writes. BENCH_ROOT=/work/before runs the same against another
 * checkout (its lib/), for before/after figures in one sitting. Results to bench/runs/results-event-places.json.
 */
export async function runEventPlacesOnly(options: { seconds: number }): Promise<void> {
  const root = process.env.BENCH_ROOT ?? path.resolve(import.meta.dirname, '..');
  const lib = (file: string) => import(path.join(root, 'lib', file));
  const { dynamo } = await lib('data/client.ts');
  const events = await lib('data/events.ts');
  const { commit } = await lib('data/transact.ts');
  const { newOrderedUuid } = await lib('data/index/order-key.ts');
  const { nowMicros } = await lib('time.ts');

  const writes = new Map<string, { writes: number; units: number }>();
  const partitions = new Map<string, number>();
  const page = { requests: 0, roundTrips: 0, items: 0, writes: 0, units: 0, inFlight: 0 };
  const count = (key: { pk: unknown; sk: unknown }, units: number) => {
    page.units += units;
    const id = `${key.pk} / ${key.sk}`;
    const w = writes.get(id) ?? { writes: 0, units: 0 };
    w.writes++;
    w.units += units;
    writes.set(id, w);
    partitions.set(String(key.pk), (partitions.get(String(key.pk)) ?? 0) + units);
  };
  const putUnits = (item: Record<string, unknown>, factor: number) => {
    const bytes = Object.entries(item).reduce(
      (n, [k, v]) => n + k.length + (v instanceof Uint8Array ? v.length : JSON.stringify(v ?? null).length),
      0,
    );
    return factor * Math.max(1, Math.ceil(bytes / 1024));
  };
  dynamo.middlewareStack.add(
    (next: (args: unknown) => Promise<{ output: { Items?: unknown[] } }>, context: { commandName: string }) =>
      async (args: { input: Record<string, unknown> }) => {
        const input = args.input;
        const name = context.commandName;
        if (name === 'TransactWriteItemsCommand') {
          for (const action of input.TransactItems as Record<string, Record<string, unknown>>[]) {
            if (action.Put) count(action.Put.Item as never, putUnits(action.Put.Item as never, 2));
            else if (action.Update) count(action.Update.Key as never, 2);
          }
          page.writes++;
        } else if (name === 'PutItemCommand') {
          count(input.Item as never, putUnits(input.Item as never, 1));
          page.writes++;
        } else if (name === 'UpdateItemCommand') {
          count(input.Key as never, 1);
          page.writes++;
        }
        page.requests++;
        if (page.inFlight++ === 0) page.roundTrips++;
        try {
          const result = await next(args);
          page.items += result.output.Items?.length ?? 0;
          return result;
        } finally {
          page.inFlight--;
        }
      },
    { step: 'initialize', name: 'eventPlacesBench' },
  );

  const accountId = `bench-places-${randomUUID().slice(0, 8)}`;
  const draftOf = (n: number) => ({
    type: 'ticket.updated',
    // A distinct object a writer's event: its shard is its creation time's (the version before ignores it).
    object: { uuid: newOrderedUuid(nowMicros() - n, n), subject: 'x'.repeat(200) },
    version: 2,
  });
  const writers = 16;
  let committed = 0;
  let n = 0;
  const deadline = Date.now() + options.seconds * 1000;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (Date.now() < deadline) {
        const places = await events.takeEventPlaces(accountId, [draftOf(++n)]);
        await commit(places.actions);
        committed++;
      }
    }),
  );
  const elapsed = (Date.now() - started) / 1000;
  const hottest = [...writes].sort((a, b) => b[1].units - a[1].units)[0] as [
    string,
    { units: number; writes: number },
  ];
  const hotPartition = [...partitions].sort((a, b) => b[1] - a[1])[0] as [string, number];
  const perEvent = (x: number) => Math.round((x / committed) * 1000) / 1000;
  const at2000 = (perEventUnits: number) => Math.round(perEventUnits * 2000);
  const writesResult = {
    root,
    writers,
    seconds: elapsed,
    eventsCommitted: committed,
    eventsPerSecond: Math.round(committed / elapsed),
    hottestItem: {
      key: hottest[0],
      writesPerEvent: perEvent(hottest[1].writes),
      unitsPerEvent: perEvent(hottest[1].units),
      unitsPerSecondAt2000: at2000(perEvent(hottest[1].units)),
    },
    hottestPartition: {
      key: hotPartition[0],
      unitsPerEvent: perEvent(hotPartition[1]),
      unitsPerSecondAt2000: at2000(perEvent(hotPartition[1])),
    },
  };
  console.log(
    `event places (${root}): ${committed} events in ${elapsed} s by ${writers} writers: ${writesResult.eventsPerSecond} events/s`,
  );
  console.log(
    `  hottest item ${hottest[0]}: ${writesResult.hottestItem.writesPerEvent} writes, ${writesResult.hottestItem.unitsPerEvent} WU an event -> ${writesResult.hottestItem.unitsPerSecondAt2000} WU/s at 2,000 events/s (${Math.round(writesResult.hottestItem.unitsPerSecondAt2000 / 10)} % of 1,000)`,
  );
  console.log(
    `  hottest partition ${hotPartition[0]}: ${writesResult.hottestPartition.unitsPerEvent} WU an event -> ${writesResult.hottestPartition.unitsPerSecondAt2000} WU/s at 2,000 events/s`,
  );

  const measure = async (label: string, run: () => Promise<{ events: unknown[] }>) => {
    Object.assign(page, { requests: 0, roundTrips: 0, items: 0, writes: 0, inFlight: 0 });
    const t = performance.now();
    const result = await run();
    const figures = {
      events: result.events.length,
      roundTrips: page.roundTrips,
      requests: page.requests,
      itemsRead: page.items,
      writes: page.writes,
      ms: Math.round(performance.now() - t),
    };
    console.log(
      `  page ${label}: ${figures.events} events, ${figures.roundTrips} round trips, ${figures.requests} requests, ${figures.itemsRead} items read, ${figures.writes} writes, ${figures.ms} ms`,
    );
    return figures;
  };
  const read = (after: string | undefined) =>
    events.readFeed(accountId, { after, limit: 100, matches: () => true });
  // The whole feed once (every lagging shard moved on the way), then a page from the middle.
  const ids: string[] = [];
  for (let after: string | undefined, i = 0; i < 10_000; i++) {
    const { events: got, last } = await read(after);
    ids.push(...got.map((e: { id: string }) => e.id));
    if (last === undefined) break;
    after = last;
  }
  const middle = await measure('after the middle, limit 100', () => read(ids[Math.floor(ids.length / 2)]));
  const again = await measure('after the middle, again', () => read(ids[Math.floor(ids.length / 2)]));
  // One new event in one shard (the others lag behind it), read from the last event served.
  const places = await events.takeEventPlaces(accountId, [draftOf(++n)]);
  await commit(places.actions);
  const tail = await measure('at the tail after one new event', () => read(ids.at(-1)));
  const newest = (await read(ids.at(-1))).events.at(-1)?.id;
  const idle = await measure('at the tail, nothing new', () => read(newest));
  const quiet = await quietFeed(newest);
  /**
   * A quiet feed: QUIET_EVENTS events of distinct objects (so of shards at random), each committed QUIET_GAP_MS
   * after the reader served the one before; one reader polls the tail (limit 100) every 20 ms until it serves the
   * new event. Counted from the commit's answer to the page that served it: the reader's writes (moving the
   * shards that lag behind the new event) and their write units, its pages and round trips.
   */
  async function quietFeed(start: string | undefined) {
    const QUIET_EVENTS = 20;
    const QUIET_GAP_MS = 200;
    const total = { events: QUIET_EVENTS, polls: 0, roundTrips: 0, writes: 0, units: 0, ms: 0 };
    let after = start;
    for (let i = 0; i < QUIET_EVENTS; i++) {
      await new Promise((resolve) => setTimeout(resolve, QUIET_GAP_MS));
      const held = await events.takeEventPlaces(accountId, [draftOf(++n)]);
      await commit(held.actions);
      Object.assign(page, { requests: 0, roundTrips: 0, items: 0, writes: 0, units: 0, inFlight: 0 });
      const t = performance.now();
      for (;;) {
        const got = await read(after);
        total.polls++;
        if (got.events.length > 0) {
          after = got.events.at(-1)?.id;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      total.ms += performance.now() - t;
      total.roundTrips += page.roundTrips;
      total.writes += page.writes;
      total.units += page.units;
    }
    const per = (x: number) => Math.round((x / QUIET_EVENTS) * 10) / 10;
    const figures = {
      ...total,
      ms: Math.round(total.ms),
      pollsPerEvent: per(total.polls),
      roundTripsPerEvent: per(total.roundTrips),
      readerWritesPerEvent: per(total.writes),
      readerUnitsPerEvent: per(total.units),
      msToServePerEvent: per(total.ms),
    };
    console.log(
      `  quiet feed (${QUIET_EVENTS} events ${QUIET_GAP_MS} ms apart, one reader polling): per event ${figures.pollsPerEvent} pages, ${figures.roundTripsPerEvent} round trips, reader writes ${figures.readerWritesPerEvent} (${figures.readerUnitsPerEvent} WU), ${figures.msToServePerEvent} ms from commit to served`,
    );
    return figures;
  }
  dynamo.middlewareStack.remove('eventPlacesBench');
  const out = path.resolve(import.meta.dirname, 'runs');
  await mkdir(out, { recursive: true });
  const file = path.join(out, `results-event-places${process.env.BENCH_ROOT ? '-other' : ''}.json`);
  await writeFile(
    file,
    `${JSON.stringify({ writes: writesResult, pages: { middle, again, tail, idle }, quiet }, null, 2)}\n`,
  );
  console.log(`  written to ${path.relative(process.cwd(), file)}`);
}
