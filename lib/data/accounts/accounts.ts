import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type Account,
  type AccountConfig,
  type Agent,
  type Category,
  type Pipeline,
  type Sequence,
  type Team,
  versionKey,
} from '#lib/accounts/types.ts';
import { accountKeys, configKeys } from '../keys.ts';
import { batchPutAll, dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { ATTR, entityOf } from '../store/items.ts';
import { transact } from '../store/transact.ts';

export async function getAccount(accountId: string): Promise<Account | undefined> {
  // Eventually consistent: the authorizer's read, and a plan change may take a moment (like its cache).
  const item = await getItem(accountKeys.account(accountId), { eventual: true });
  return item ? entityOf<Account>(item) : undefined;
}

export async function findAccountIdBySlug(slug: string): Promise<string | undefined> {
  return (await getItem(accountKeys.slug(slug)))?.accountId as string | undefined;
}

/** The whole configuration of an account in one Query of its config partition (paged past 1 MB). */
export async function loadAccountConfig(accountId: string): Promise<AccountConfig | undefined> {
  const config: Partial<AccountConfig> & Omit<AccountConfig, 'account'> = {
    teams: [],
    agents: [],
    categories: [],
    pipelines: [],
    versions: {},
  };
  const versions = config.versions as Record<string, number>;
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': accountKeys.configPartition(accountId) },
    ConsistentRead: true,
  });
  for (const item of items) {
    switch (item.type) {
      case 'account':
        config.account = entityOf<Account>(item);
        break;
      case 'team':
        config.teams.push(entityOf<Team>(item));
        versions[versionKey('team', Number(item.id))] = versionOf(item);
        break;
      case 'agent':
        config.agents.push(entityOf<Agent>(item));
        versions[versionKey('agent', Number(item.id))] = versionOf(item);
        break;
      case 'category':
        config.categories.push(entityOf<Category>(item));
        break;
      case 'pipeline':
        config.pipelines.push(entityOf<Pipeline>(item));
        break;
    }
  }
  return config.account ? (config as AccountConfig) : undefined;
}

/** An item's version (its ETag's number): items an account file wrote before versions existed are at 1. */
const versionOf = (item: Record<string, unknown>) => Number(item[ATTR.version] ?? 1);

/** Pipelines of an account, ordered by id (their sort key), in one Query. */
export async function listPipelineItems(accountId: string): Promise<Pipeline[]> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: {
      ':pk': accountKeys.configPartition(accountId),
      ':prefix': configKeys.pipelinePrefix,
    },
  });
  return items.map((item) => entityOf<Pipeline>(item));
}

/** The sequences of the sequences item: the account file's ids, and ticket numbers. */
type IdSequence = Sequence | 'ticket' | 'rule' | 'macro';

/**
 * Reserves `count` consecutive ids of a sequence in one atomic update and returns the first.
 * Ids are never reused; a failed write after reserving leaves a gap, which is harmless.
 */

export async function reserveIds(accountId: string, counts: Partial<Record<IdSequence, number>>) {
  const names = Object.entries(counts).filter(([, n]) => (n ?? 0) > 0) as [IdSequence, number][];
  const first: Partial<Record<IdSequence, number>> = {};
  if (names.length === 0) return first;
  const { Attributes } = await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: accountKeys.sequences(accountId),
      UpdateExpression: `ADD ${names.map((_, i) => `#s${i} :n${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map(([name], i) => [`#s${i}`, name])),
      ExpressionAttributeValues: Object.fromEntries(names.map(([, n], i) => [`:n${i}`, n])),
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  for (const [name, n] of names) first[name] = (Attributes?.[name] as number) - n + 1;
  return first;
}

export type ConfigEntity =
  | { type: 'team'; value: Team }
  | { type: 'agent'; value: Agent }
  | { type: 'category'; value: Category }
  | { type: 'pipeline'; value: Pipeline };

function configItem(accountId: string, entity: ConfigEntity) {
  const keyOf = configKeys[entity.type];
  return { ...keyOf(accountId, entity.value.id), type: entity.type, ...entity.value };
}

function accountItem(account: Account) {
  return { ...accountKeys.account(account.id), type: 'account', ...account };
}

/**
 * Creates an account: the slug item (unique) and the account item in one transaction, so two concurrent
 * first applies of the same file cannot both create it.
 */
export async function createAccount(account: Account): Promise<void> {
  await transact([
    {
      Put: {
        TableName: tableName(),
        Item: { ...accountKeys.slug(account.slug), type: 'account_slug', accountId: account.id },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: tableName(),
        Item: accountItem(account),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ]);
}

export async function putAccount(account: Account): Promise<void> {
  await batchPutAll([accountItem(account)]);
}

export async function putConfigEntities(accountId: string, entities: ConfigEntity[]): Promise<void> {
  await batchPutAll(entities.map((entity) => configItem(accountId, entity)));
}
