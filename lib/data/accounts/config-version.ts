import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { accountKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';

/**
 * The version of an account's configuration (docs/decisions.md, "Settings seen at once"): a number on the account's
 * rate item, which every API request already updates and reads back (lib/data/requests/rate-limit.ts), so a
 * request learns the current version at no cost and a container reloads its cached configuration when it moved.
 * Every change of agents or teams (the API's and `apply`'s) moves it once its commit landed: a request begun after
 * the change answered sees the new version, and a load begun after that sees the change. A crash between the
 * commit and the move leaves the change to the cache's lifetime (30 s), as before the version existed.
 */
export const CONFIG_VERSION_ATTRIBUTE = 'cfg';

/** The version as an item read holds it (an account never changed since: 0). */
export const configVersionOf = (item: Record<string, unknown> | undefined): number =>
  Number(item?.[CONFIG_VERSION_ATTRIBUTE] ?? 0);

/** Moves the version on, after a change of the configuration committed. */
export async function moveConfigVersion(accountId: string): Promise<void> {
  await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: accountKeys.rate(accountId),
      UpdateExpression: 'ADD #cfg :one',
      ExpressionAttributeNames: { '#cfg': CONFIG_VERSION_ATTRIBUTE },
      ExpressionAttributeValues: { ':one': 1 },
    }),
  );
}

/** The current version, read (outside an API request, which has it from its rate count). */
export async function readConfigVersion(accountId: string): Promise<number> {
  return configVersionOf(await getItem(accountKeys.rate(accountId)));
}

/**
 * The version of an account's rules, beside the configuration's on the rate item (lib/rules/cache.ts): a request
 * reads it back with its count. It is the rules partition's own version (`META`'s `rv`, which each rule write moves
 * on in its commit: by one, or past a raise whose commit failed), raised to the version a rule write is about to commit before its commit is sent
 * (lib/data/rules/rules.ts, writeRule): so no crash after a commit can leave the rules changed and this version
 * behind. A raise whose commit then fails or is lost leaves it ahead of `META`: the rules cache then holds what it
 * reads for RULES_FRESH_SECONDS at most (lib/rules/cache.ts), until the next write commits past it.
 */
export const RULES_VERSION_ATTRIBUTE = 'rul';

/** The rules version as an item read holds it (no rule written since: 0). */
export const rulesVersionOf = (item: Record<string, unknown> | undefined): number =>
  Number(item?.[RULES_VERSION_ATTRIBUTE] ?? 0);

/**
 * Raises the rules version to `to` (never lowers it: a slower writer's raise does nothing). Answers the version the
 * write is to commit: `to`, or, when the version already stood at `to` or past it (a raise whose commit failed, or
 * a writer under way), one past that, raised too. Committing `to` then would leave it where rules read since that
 * raise already claim to be current, for up to RULES_FRESH_SECONDS in other containers (lib/rules/cache.ts).
 */
export async function raiseRulesVersion(accountId: string, to: number): Promise<number> {
  let next = to;
  for (let tries = 0; tries < 3; tries++) {
    try {
      await dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: accountKeys.rate(accountId),
          UpdateExpression: 'SET #rul = :to',
          ConditionExpression: 'attribute_not_exists(#rul) OR #rul < :to',
          ExpressionAttributeNames: { '#rul': RULES_VERSION_ATTRIBUTE },
          ExpressionAttributeValues: { ':to': next },
        }),
      );
      return next;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      next = rulesVersionOf(await getItem(accountKeys.rate(accountId))) + 1;
    }
  }
  // Raced three times: another writer commits first, and this write's commit is refused on META's version.
  return next;
}
