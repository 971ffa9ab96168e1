import { ensureTable } from '#infra/local/dynamodb-local.ts';

/** Tests of behaviour run against DynamoDB Local, never a mock: refuse to run without it. */
if (!process.env.DYNAMODB_ENDPOINT || !process.env.TABLE_NAME) {
  throw new Error(
    'DYNAMODB_ENDPOINT and TABLE_NAME must point at DynamoDB Local (set by test/support/global-setup.ts).',
  );
}

/**
 * A store of its own for each vitest worker (global-setup.ts starts one per worker: store-workers.ts says why),
 * and a table of its own on it: the runners a test drives (SLA breaches, purge, webhooks, the reindex) work on
 * every account of the table, so files running at once in two workers would find each other's tickets,
 * deliveries and due entries. Files of one worker run one after another, as they would in a serial run, on that
 * worker's table.
 */
const worker = process.env.VITEST_POOL_ID ?? '1';
const stores = (process.env.TEST_STORE_ENDPOINTS ?? process.env.DYNAMODB_ENDPOINT).split(',');
const endpoint = stores[(Number(worker) - 1) % stores.length] ?? process.env.DYNAMODB_ENDPOINT;
process.env.DYNAMODB_ENDPOINT = endpoint;
// The run's base name, kept from the worker's first file: a file that names a table of its own (erasures, admin-cli)
// changes TABLE_NAME for the rest of the worker's process, and the files after it go back to the worker's table.
process.env.TEST_TABLE_BASE ??= process.env.TABLE_NAME.replace(/-w\d+$/, '');
process.env.TABLE_NAME = `${process.env.TEST_TABLE_BASE}-w${worker}`;
await ensureTable(endpoint, process.env.TABLE_NAME);
