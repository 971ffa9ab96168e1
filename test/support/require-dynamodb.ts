import { relative } from 'node:path';
import { afterAll, expect } from 'vitest';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local.ts';
import { ROOT } from '#infra/local/environment.ts';
import { fileTable, OWN_STORE_FILES } from './file-table.ts';

/** Tests of behaviour run against DynamoDB Local, never a mock: refuse to run without it. */
if (!process.env.DYNAMODB_ENDPOINT) {
  throw new Error('DYNAMODB_ENDPOINT must point at DynamoDB Local (set by test/support/global-setup.ts).');
}

/**
 * A store of its own for each vitest worker (global-setup.ts starts one per worker: store-workers.ts says why),
 * and on it a table of the file's own (file-table.ts), made before its tests and dropped after them. A file whose
 * table has a stream gets a store of its own instead (file-table.ts, OWN_STORE_FILES says why), started here,
 * before the data layer's client is made with the endpoint, and stopped after the file.
 */
const file = relative(ROOT, expect.getState().testPath ?? '');
const worker = process.env.VITEST_POOL_ID ?? '1';
const stores = (process.env.TEST_STORE_ENDPOINTS ?? process.env.DYNAMODB_ENDPOINT).split(',');
let endpoint = stores[(Number(worker) - 1) % stores.length] ?? process.env.DYNAMODB_ENDPOINT;
const ownStore = OWN_STORE_FILES.includes(file);
if (ownStore) {
  const store = await startDynamoDbLocal({ port: 0 });
  // Registered before the table's hooks: the table is dropped first, then its store stopped.
  afterAll(() => store.stop());
  endpoint = store.endpoint;
}
process.env.DYNAMODB_ENDPOINT = endpoint;
fileTable(endpoint, { ownStore });
