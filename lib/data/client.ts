import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  BatchWriteCommand,
  type BatchWriteCommandOutput,
  DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { requireEnv } from '#lib/config/env.ts';
import { chunks } from './items.ts';

/**
 * One document client per container, created at module load and reused by every invocation.
 * DYNAMODB_ENDPOINT points it at DynamoDB Local; unset, it uses the AWS default chain.
 */
const endpoint = process.env.DYNAMODB_ENDPOINT;

export const dynamo = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    ...(endpoint
      ? {
          endpoint,
          region: process.env.AWS_REGION ?? 'local',
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
    maxAttempts: 3,
  }),
  { marshallOptions: { removeUndefinedValues: true } },
);

let cachedTableName: string | undefined;

export function tableName(): string {
  cachedTableName ??= requireEnv('TABLE_NAME');
  return cachedTableName;
}

/**
 * Every item of a Query, following LastEvaluatedKey; with `limit`, stops once that many are read.
 * One round trip per 1 MB page (or per `limit`).
 */
export async function queryAll(input: QueryCommandInput, limit?: number): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await dynamo.send(
      new QueryCommand({
        ...input,
        ExclusiveStartKey: startKey,
        ...(limit !== undefined ? { Limit: limit - items.length } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && (limit === undefined || items.length < limit));
  return items;
}

/** Items by key, strongly consistent: chunks of 100 in parallel, unprocessed keys asked again. */
export async function batchGetAll(keys: Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
  const groups = await Promise.all(
    chunks(keys, 100).map(async (group) => {
      const found: Record<string, unknown>[] = [];
      let pending: Record<string, unknown>[] | undefined = group;
      while (pending && pending.length > 0) {
        const { Responses, UnprocessedKeys }: BatchGetCommandOutput = await dynamo.send(
          new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: pending, ConsistentRead: true } } }),
        );
        found.push(...(Responses?.[tableName()] ?? []));
        pending = UnprocessedKeys?.[tableName()]?.Keys;
      }
      return found;
    }),
  );
  return groups.flat();
}

/** Puts items (no conditions): chunks of 25, one after another, unprocessed items sent again. */
export async function batchPutAll(items: Record<string, unknown>[]): Promise<void> {
  for (const group of chunks(items, 25)) {
    let requests: Record<string, unknown>[] | undefined = group.map((Item) => ({ PutRequest: { Item } }));
    while (requests && requests.length > 0) {
      const { UnprocessedItems }: BatchWriteCommandOutput = await dynamo.send(
        new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }),
      );
      requests = UnprocessedItems?.[tableName()];
    }
  }
}
