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
