import { fileTable } from './file-table.ts';

/** Tests of behaviour run against DynamoDB Local, never a mock: refuse to run without it. */
if (!process.env.DYNAMODB_ENDPOINT) {
  throw new Error('DYNAMODB_ENDPOINT must point at DynamoDB Local (set by test/support/global-setup.ts).');
}

/**
 * A store of its own for each vitest worker (global-setup.ts starts one per worker: store-workers.ts says why),
 * and on it a table of the file's own (file-table.ts), made before its tests and dropped after them.
 */
const worker = process.env.VITEST_POOL_ID ?? '1';
const stores = (process.env.TEST_STORE_ENDPOINTS ?? process.env.DYNAMODB_ENDPOINT).split(',');
const endpoint = stores[(Number(worker) - 1) % stores.length] ?? process.env.DYNAMODB_ENDPOINT;
process.env.DYNAMODB_ENDPOINT = endpoint;
fileTable(endpoint);
