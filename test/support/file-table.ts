import { randomBytes } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { localClient } from '#infra/local/dynamodb-local.ts';
import { createTableInput } from '#lib/data/store/table.ts';

/**
 * A table of its own for each test file, created before the file's tests and dropped after them
 * (docs/testing.md, "A table per file"): the runners a test drives (SLA breaches, the outbox, webhooks, the purge,
 * erasures, the reindex) see that file's items only, a Scan reads only what the file wrote, and the store stays
 * small. It has no stream unless the file declares one (`useTable({ stream: true })`): on DynamoDB Local a ticket
 * create takes ~25-33 ms on a table with a stream and ~16-20 ms without.
 */
const declared = { stream: false, created: false, ownStore: false };

/**
 * The files whose table has a stream (they run the webhook dispatcher), each on a DynamoDB Local of its own
 * (require-dynamodb.ts starts it before the data layer loads): DynamoDB Local makes every write to a table with a
 * stream slower by the stream records of every other table it has held, dropped ones included (a 25-item batch
 * write: 12 ms on a fresh store, 49 ms after one table with 7,500 stream records, 112 ms after two; writes to a
 * table without a stream stay at 9 ms). On a worker's store, webhooks-pool ran after webhooks-dispatch's 300
 * changes and took three to four times its time alone, past its 30 s.
 */
export const OWN_STORE_FILES: readonly string[] = [
  'test/system/webhooks-dispatch.test.ts',
  'test/system/webhooks-pool.test.ts',
];

/**
 * What the file needs of its table, declared while the file is collected (at its top level or in a describe's
 * body), before the table is made: `stream` for the webhook dispatcher's stream reader (infra/local/webhooks.ts),
 * only in a file on a store of its own (OWN_STORE_FILES).
 */
export function useTable(options: { stream?: boolean }): void {
  if (declared.created) throw new Error('useTable(): declare the table while the file is collected');
  if (options.stream && !declared.ownStore) {
    throw new Error(
      'useTable({ stream: true }): a table with a stream slows every later stream of its store; list the file in ' +
        'OWN_STORE_FILES (test/support/file-table.ts), which gives it a DynamoDB Local of its own',
    );
  }
  if (options.stream) declared.stream = true;
}

/**
 * Names the file's table in TABLE_NAME (the data layer reads it at each call: the api tier's files share a module
 * graph in a worker), and makes it in the first hook of the file, dropped in the last.
 * `ownStore`: the store at `endpoint` serves this file alone (OWN_STORE_FILES).
 */
export function fileTable(endpoint: string, options: { ownStore?: boolean } = {}): string {
  const name = `deskpipe-test-${randomBytes(6).toString('hex')}`;
  // A worker's files may share this module (the api tier): each declares its own table.
  Object.assign(declared, { stream: false, created: false, ownStore: options.ownStore ?? false });
  process.env.TABLE_NAME = name;
  beforeAll(async () => {
    declared.created = true;
    const { StreamSpecification, ...withoutStream } = createTableInput(name);
    await send(
      endpoint,
      new CreateTableCommand(declared.stream ? { ...withoutStream, StreamSpecification } : withoutStream),
    );
  });
  afterAll(async () => {
    await send(endpoint, new DeleteTableCommand({ TableName: name }));
  });
  return name;
}

async function send(endpoint: string, command: CreateTableCommand | DeleteTableCommand): Promise<void> {
  const client = localClient(endpoint);
  try {
    await client.send(command as CreateTableCommand);
  } finally {
    client.destroy();
  }
}
