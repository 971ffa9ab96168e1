import { randomBytes } from 'node:crypto';
import { QueryCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { FiredCounts } from '#lib/rules/types.ts';
import { firingKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { ConcurrentWrite } from '../store/errors.ts';
import { table } from '../store/table.ts';
import type { CommitAction } from '../store/transact.ts';
import { inParallel } from '../webhook-deliveries/queue.ts';

/**
 * A rule's firings, for its exact `fired` counts (docs/rules.md, "`fired`"; keys/rules.ts, firingKeys): a small
 * item per firing, written in the ticket change's own transaction (so a firing is counted exactly when its change
 * commits, and a retry of a committed change is refused by the ticket's version guard before it writes again),
 * read back over the last week and counted in memory. No counter item: many changes a second may fire one rule.
 */

const HOUR_US = 3_600_000_000;
const DAY_US = 24 * HOUR_US;
const WEEK_US = 7 * DAY_US;

/** A firing is kept 8 days (TTL): the week it is counted in, and a day for TTL's own lateness. */
export const FIRING_RETENTION_SECONDS = 8 * 24 * 60 * 60;

/**
 * The Puts of a change's firings (the rules that fired, in order), at the change's time, for its commit: one
 * ~150-byte item each (2 write units in a transaction); the key and its TTL only (the rule's version is in the
 * change's event, `data.rules`). A key is unique by its nonce; should one ever be taken, the
 * change is refused as a concurrent write and decided again (with a new nonce).
 */
export function firingPuts(
  accountId: string,
  fired: readonly { id: number; version: number }[],
  atUs: number,
  ticketUuid: string,
): CommitAction[] {
  const expires = Math.floor(atUs / 1_000_000) + FIRING_RETENTION_SECONDS;
  return fired.map((rule, place) => ({
    what: 'rule_fired',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...firingKeys.firing(accountId, rule.id, {
            us: atUs,
            ticketUuid,
            place,
            nonce: randomBytes(4).toString('hex'),
          }),
          type: 'rule_fired',
          [table.ttlAttribute]: expires,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    refused: () => new ConcurrentWrite(),
  }));
}

/** Rules whose firings are read at once (one Query each, a round trip per ~1 MB of a rule's week). */
const COUNT_CONCURRENCY = 16;

/**
 * Exact counts of each rule's firings at `nowUs - 1 h` … `nowUs`, `- 24 h` … and `- 7 d` …, both ends included: one
 * strongly consistent Query per rule over its week (sort keys only; COUNT_CONCURRENCY at a time), counted in memory.
 * A firing stamped after `nowUs` (a change committed by a host whose clock runs ahead) is not counted until `nowUs`
 * reaches it: a count never holds the future, and it is counted once the time comes.
 */
export async function firedCounts(
  accountId: string,
  ruleIds: readonly number[],
  nowUs: number,
): Promise<Map<number, FiredCounts>> {
  const ids = [...new Set(ruleIds)];
  const counts = await inParallel(ids, (ruleId) => countFirings(accountId, ruleId, nowUs), COUNT_CONCURRENCY);
  return new Map(ids.map((id, i) => [id, counts[i] as FiredCounts]));
}

/** One rule's counts: its week's firings read a page (1 MB, ~6,500 firings) at a time, each page counted and let go. */
async function countFirings(accountId: string, ruleId: number, nowUs: number): Promise<FiredCounts> {
  const range = firingKeys.between(nowUs - WEEK_US, nowUs);
  const counted = { last_hour: 0, last_day: 0, last_week: 0 };
  let startKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: {
          ':pk': firingKeys.partition(accountId, ruleId),
          ':from': range.from,
          ':to': range.to,
        },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      // The range holds the week up to `nowUs`; the hour and the day are its newest part.
      const age = nowUs - firingKeys.timeOf(String(item.sk));
      counted.last_week++;
      if (age <= DAY_US) counted.last_day++;
      if (age <= HOUR_US) counted.last_hour++;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return counted;
}
