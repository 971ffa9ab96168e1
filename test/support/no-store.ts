import { dynamo } from '#lib/data/store/client.ts';

/**
 * Runs before every file of the unit tier (vitest setupFiles). The unit tier starts no DynamoDB: a test that
 * reaches the store through the service's client fails at once, saying where it belongs, instead of waiting
 * for a connection that vitest.config.ts points nowhere.
 */
dynamo.middlewareStack.add(
  (_next, context) => async () => {
    throw new Error(
      `${String(context.commandName)}: the unit tier has no DynamoDB; a test that needs the store belongs in test/api or test/system (docs/testing.md)`,
    );
  },
  // The unit tier's files share their worker's modules (vitest.config.ts, isolate: false): the client is the
  // same from one file to the next, and so is this middleware.
  { step: 'initialize', name: 'unitTierHasNoStore', priority: 'high', override: true },
);
