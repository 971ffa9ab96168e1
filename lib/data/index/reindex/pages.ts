import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from '../../store/client.ts';

/**
 * One partition read page by page, strongly consistent, from the cursor `after()` returns when each page is asked
 * for: the caller saves the last sort key it has done after each page, so a run that stops resumes after it.
 * `more` is false on the partition's last page.
 */
export async function* pagesOf(
  pk: string,
  after: () => string | undefined,
  options: { limit: number; projection?: string; names?: Record<string, string> },
): AsyncGenerator<{ items: Record<string, unknown>[]; more: boolean }> {
  for (;;) {
    const from = after();
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ...(options.projection ? { ProjectionExpression: options.projection } : {}),
        ...(options.names ? { ExpressionAttributeNames: options.names } : {}),
        ConsistentRead: true,
        Limit: options.limit,
        ...(from ? { ExclusiveStartKey: { pk, sk: from } } : {}),
      }),
    );
    const items = page.Items ?? [];
    if (items.length === 0) return;
    const more = page.LastEvaluatedKey !== undefined;
    yield { items, more };
    if (!more) return;
  }
}
