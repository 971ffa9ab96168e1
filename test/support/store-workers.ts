/**
 * How many files of a store tier run at once (vitest.config.ts), and so how many DynamoDB Locals the run starts
 * (global-setup.ts): one per worker. DynamoDB Local runs every statement of every table on one SQLite thread
 * behind one lock, so two workers on one store queue behind each other's load: a fresh-clone run measured 2 s
 * request timeouts in both workers at the same moments, whatever their tables (docs/testing.md).
 */
export const STORE_WORKERS = 2;
