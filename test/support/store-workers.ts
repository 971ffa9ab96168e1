/**
 * How many files of a store tier run at once (vitest.config.ts), and so how many DynamoDB Locals the run starts
 * (global-setup.ts): one per worker. DynamoDB Local runs every statement of every table on one SQLite thread
 * behind one lock, so two workers on one store queue behind each other's load: a fresh-clone run measured 2 s
 * request timeouts in both workers at the same moments, whatever their tables (docs/testing.md).
 */
export const STORE_WORKERS = 2;

/**
 * The files whose table has a stream (they run the webhook dispatcher), each on a DynamoDB Local of its own
 * (require-dynamodb.ts starts it before the data layer loads, so vitest.config.ts gives them a module graph of their
 * own): DynamoDB Local makes every write to a table with a stream slower by the stream records of every other table
 * it has held, dropped ones included (a 25-item batch write: 12 ms on a fresh store, 49 ms after one table with 7,500
 * stream records, 112 ms after two; writes to a table without a stream stay at 9 ms). On a worker's store,
 * webhooks-pool ran after webhooks-dispatch's 300 changes and took three to four times its time alone, past its 30 s.
 */
export const OWN_STORE_FILES: readonly string[] = [
  'test/system/webhooks-dispatch.test.ts',
  'test/system/webhooks-pool.test.ts',
];
