import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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
