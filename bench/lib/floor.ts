import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { localClient } from '#infra/local/dynamodb-local.ts';
import { log } from './measure.ts';
import { type Timing, time } from './stats.ts';

export type FloorOp = 'GetItem' | 'Query' | 'UpdateItem' | 'TransactWriteItems';
export type Floor = Record<FloorOp, Timing>;

/** Single DynamoDB operations on the same store, sequentially, after 100 warm-up calls: what a request costs at least. */
export async function measureFloor(endpoint: string, n: number): Promise<Floor> {
  const client = DynamoDBDocumentClient.from(localClient(endpoint));
  const TableName = process.env.TABLE_NAME;
  const body = 'x'.repeat(700);
  await client.send(new PutCommand({ TableName, Item: { pk: 'FLOOR', sk: 'ITEM', body } }));
  for (let i = 0; i < 20; i++) {
    await client.send(
      new PutCommand({ TableName, Item: { pk: 'FLOOR#Q', sk: String(i).padStart(3, '0'), body } }),
    );
  }
  const floor = {
    GetItem: await time(
      () => client.send(new GetCommand({ TableName, Key: { pk: 'FLOOR', sk: 'ITEM' } })),
      n,
      100,
    ),
    Query: await time(
      () =>
        client.send(
          new QueryCommand({
            TableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': 'FLOOR#Q' },
            Limit: 15,
          }),
        ),
      n,
      100,
    ),
    UpdateItem: await time(
      () =>
        client.send(
          new UpdateCommand({
            TableName,
            Key: { pk: 'FLOOR', sk: 'COUNTER' },
            UpdateExpression: 'ADD n :one',
            ExpressionAttributeValues: { ':one': 1 },
          }),
        ),
      n,
      100,
    ),
    TransactWriteItems: await time(
      (i) =>
        client.send(
          new TransactWriteCommand({
            TransactItems: [0, 1, 2].map((j) => ({
              Put: { TableName, Item: { pk: `FLOOR#T${i}`, sk: String(j), body } },
            })),
          }),
        ),
      n,
      100,
    ),
  } satisfies Floor;
  for (const [op, t] of Object.entries(floor)) log(`  ${op.padEnd(20)} p50 ${t.p50} ms  p99 ${t.p99} ms`);
  client.destroy();
  return floor;
}

/** A single TransactWriteItems of `items` small puts: the floor of a write of that size. */
export async function measureTransaction(endpoint: string, items: number, n: number): Promise<Timing> {
  const client = DynamoDBDocumentClient.from(localClient(endpoint));
  const TableName = process.env.TABLE_NAME;
  const body = 'x'.repeat(200);
  const tag = `${items}-${Date.now()}`;
  const timing = await time(
    (i) =>
      client.send(
        new TransactWriteCommand({
          TransactItems: Array.from({ length: items }, (_, j) => ({
            Put: { TableName, Item: { pk: `FLOOR#S${tag}#${i}`, sk: String(j), body } },
          })),
        }),
      ),
    n,
    20,
  );
  client.destroy();
  return timing;
}
