import type { TestProject } from 'vitest/node';
import { ensureTable, startDynamoDbLocal } from '#infra/local/dynamodb-local.ts';

/**
 * Starts AWS's DynamoDB Local in memory on a free port for the whole run and creates the table from its
 * one declaration. Workers inherit DYNAMODB_ENDPOINT and TABLE_NAME, so every test talks to the real thing.
 */
export default async function setup(_project: TestProject) {
  if (process.env.DYNAMODB_ENDPOINT && process.env.DESKPIPE_TEST_EXTERNAL_DB !== '1') {
    // A developer's own DYNAMODB_ENDPOINT (from npm start) must not receive test data.
    delete process.env.DYNAMODB_ENDPOINT;
  }
  const store = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDbLocal({ port: 0 });
  const endpoint = process.env.DYNAMODB_ENDPOINT ?? store?.endpoint;
  if (!endpoint) throw new Error('no DynamoDB endpoint');
  process.env.DYNAMODB_ENDPOINT = endpoint;
  process.env.TABLE_NAME = 'deskpipe-test';
  await ensureTable(endpoint, process.env.TABLE_NAME);
  return async () => {
    await store?.stop();
  };
}
