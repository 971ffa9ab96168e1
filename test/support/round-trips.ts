import { dynamo } from '#lib/data/client.ts';

/**
 * Counts DynamoDB calls, and sequential round trips: a call that starts while no other call is in flight
 * begins a new round trip; calls started while one is in flight run in parallel with it.
 */
let inFlight = 0;
let calls: string[] = [];
let roundTrips = 0;
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push(String(context.commandName));
      if (inFlight === 0) roundTrips++;
      inFlight++;
      try {
        return await next(args);
      } finally {
        inFlight--;
      }
    },
    { step: 'initialize', name: 'roundTripCounter' },
  );
}

export async function countRoundTrips<T>(work: () => Promise<T>) {
  install();
  calls = [];
  roundTrips = 0;
  const result = await work();
  return { result, roundTrips, calls: [...calls] };
}
