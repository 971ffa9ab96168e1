import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

/** Cold-start baseline: a function that holds only the DynamoDB document client. */
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export async function handler(event: { key: Record<string, string> }) {
  return client.send(new GetCommand({ TableName: process.env.TABLE_NAME, Key: event.key }));
}
