import type { TestProject } from 'vitest/node';
import { ensureTable, startDynamoDbLocal } from '#infra/local/dynamodb-local.ts';

/**
 * Starts AWS's DynamoDB Local in memory on a free port and creates the table from its one declaration, for the
 * tiers that need a store (vitest.config.ts). Workers inherit DYNAMODB_ENDPOINT and TABLE_NAME, so every test
 * talks to the real thing. When the api and system tiers run together (`npm test`), each runs this setup: the
 * first starts the store, the second uses the same one, and the last teardown stops it.
 */
interface SharedStore {
  ready: Promise<string>;
  users: number;
  stop: () => Promise<void>;
}

const shared = globalThis as { deskpipeTestStore?: SharedStore };

async function start(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  if (process.env.DYNAMODB_ENDPOINT && process.env.DESKPIPE_TEST_EXTERNAL_DB !== '1') {
    // A developer's own DYNAMODB_ENDPOINT (from npm start) must not receive test data.
    delete process.env.DYNAMODB_ENDPOINT;
  }
  const store = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDbLocal({ port: 0 });
  const endpoint = process.env.DYNAMODB_ENDPOINT ?? store?.endpoint;
  if (!endpoint) throw new Error('no DynamoDB endpoint');
  return { endpoint, stop: async () => await store?.stop() };
}

export default async function setup(_project: TestProject) {
  if (!shared.deskpipeTestStore) {
    let stop: () => Promise<void> = async () => {};
    const ready = start().then(async (started) => {
      stop = started.stop;
      await ensureTable(started.endpoint, 'deskpipe-test');
      return started.endpoint;
    });
    shared.deskpipeTestStore = { ready, users: 0, stop: () => stop() };
  }
  const store = shared.deskpipeTestStore;
  store.users++;
  process.env.DYNAMODB_ENDPOINT = await store.ready;
  process.env.TABLE_NAME = 'deskpipe-test';
  return async () => {
    if (--store.users > 0) return;
    shared.deskpipeTestStore = undefined;
    await store.stop();
  };
}
