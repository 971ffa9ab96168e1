import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';

/**
 * How many items of one partition (optionally a sort-key range) have `attribute` = `value`: a COUNT Query,
 * page after page, on the client given (the bench's own, so the service's figures do not count it).
 */
export async function countItems(
  client: DynamoDBDocumentClient,
  query: {
    tableName: string;
    pk: string;
    range?: { from: string; to: string };
    attribute: string;
    value: string;
  },
): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: query.tableName,
        KeyConditionExpression: query.range ? 'pk = :pk AND sk BETWEEN :from AND :to' : 'pk = :pk',
        FilterExpression: '#attribute = :value',
        ExpressionAttributeNames: { '#attribute': query.attribute },
        ExpressionAttributeValues: {
          ':pk': query.pk,
          ':value': query.value,
          ...(query.range ? { ':from': query.range.from, ':to': query.range.to } : {}),
        },
        Select: 'COUNT',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}
