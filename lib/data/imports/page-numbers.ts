import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { reserveIds } from '../accounts/accounts.ts';
import { importKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { table } from '../store/table.ts';

/** How long a page's block is kept: past any job's life (a paused one is cancelled after 7 days). */
const KEPT_DAYS = 30;

/**
 * The first of `count` ticket numbers for the new tickets of the page `mark` names (`<import id>:<page>`,
 * ImportContext.mark), the same block for every attempt at the page: a page written again after a crash gives its
 * tickets the numbers the first attempt took (docs/imports.md, "Writing tickets"), where each attempt reserved a new
 * block and the references skipped. The block is kept beside the job (`IMPORT_NUMBERS#<acc>#<id>` / page, expired
 * by the TTL); a page whose new tickets are not the block's count (another run made some meanwhile) takes a new one.
 * One GetItem a page, and a reservation and a conditional Put the first time.
 */
export async function pageNumbers(accountId: string, mark: string, count: number): Promise<number> {
  const [importId = '', page = ''] = mark.split(':');
  const key = importKeys.pageNumbers(accountId, importId, page);
  const kept = await getItem(key);
  if (kept && kept.count === count) return Number(kept.first);
  const first = (await reserveIds(accountId, { ticket: count })).ticket as number;
  const expires = Math.floor(nowMillis() / 1000) + KEPT_DAYS * 24 * 60 * 60;
  try {
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...key, type: 'import_page_numbers', first, count, [table.ttlAttribute]: expires },
        ...(kept ? {} : { ConditionExpression: 'attribute_not_exists(pk)' }),
      }),
    );
  } catch (error) {
    // Another attempt at the page kept its block first (runners do not overlap on a job; a lease that ran out does).
    if (!isConditionFailure(error)) throw error;
    const other = await getItem(key);
    if (other && other.count === count) return Number(other.first);
  }
  return first;
}
