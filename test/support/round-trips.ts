import { dynamo } from '#lib/data/store/client.ts';
import { figuresOf, instrument } from './dynamo-figures.ts';

let installed = false;

/** Runs one request and returns its result with its sequential DynamoDB round trips and calls. */
export async function countRoundTrips<T>(work: () => Promise<T>) {
  if (!installed) {
    instrument(dynamo);
    installed = true;
  }
  let result: T | undefined;
  const figures = await figuresOf(async () => {
    result = await work();
  });
  return {
    result: result as T,
    roundTrips: figures.roundTrips,
    calls: figures.operations.flat(),
    itemsRead: figures.itemsRead,
    ticketsRead: figures.ticketsRead,
    countItemsRead: figures.countItemsRead,
  };
}

/**
 * countRoundTrips of the same request made `tries` times, the one with the fewest round trips. A call is counted
 * one round deeper than the deepest answer it was sent after; DynamoDB Local answers one call at a time, so a call
 * that waits on an answer that came late (a create's number waits on the rate count, sent beside the key's claim)
 * can be sent after an unrelated answer and be counted a round too deep. The fewest of a few tries is the
 * request's own depth; a request that really takes one more round takes it every time. Five: under a fresh clone's
 * full load, three creates in a row each came out a round too deep (test/api/round-trips.test.ts, 2026-12-06).
 */
export async function fewestRoundTrips<T>(work: (attempt: number) => Promise<T>, tries = 5) {
  let best: Awaited<ReturnType<typeof countRoundTrips<T>>> | undefined;
  for (let attempt = 0; attempt < tries; attempt++) {
    const measured = await countRoundTrips(() => work(attempt));
    if (!best || measured.roundTrips < best.roundTrips) best = measured;
  }
  return best as Awaited<ReturnType<typeof countRoundTrips<T>>>;
}
