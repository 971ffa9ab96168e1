import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { requireEnv } from '#lib/config/env.ts';

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
