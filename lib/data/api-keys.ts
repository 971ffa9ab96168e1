import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';
import { dynamo, getItem, queryAll, tableName } from './client.ts';
import { isConditionFailure } from './errors.ts';
import { entityOf } from './items.ts';
import { apiKeyKeys } from './keys.ts';
import { table } from './table.ts';
import { transact } from './transact.ts';

/** What the authorizer needs from a key, in a single GetItem by the key's hash. */
export interface ApiKeyLookup {
  keyId: string;
  accountId: string;
  revokedAt: Timestamp | null;
  lastUsedAt: Timestamp | null;
}

/** Stores a new key: the hash lookup (for the authorizer) and the record (for listing) in one transaction. */
export async function putApiKey(record: ApiKeyRecord): Promise<void> {
  const lookup: ApiKeyLookup = {
    keyId: record.id,
    accountId: record.accountId,
    revokedAt: null,
    lastUsedAt: null,
  };
  await transact([
    {
      Put: {
        TableName: tableName(),
        Item: { ...apiKeyKeys.lookup(record.hash), type: 'api_key_lookup', ...lookup },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: tableName(),
        Item: {
          ...apiKeyKeys.record(record.accountId, record.id),
          ...apiKeyKeys.byId(record.id),
          type: 'api_key',
          ...record,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ]);
}

export async function findApiKeyByHash(hash: string): Promise<ApiKeyLookup | undefined> {
  const item = await getItem(apiKeyKeys.lookup(hash), { eventual: true });
  return item ? entityOf<ApiKeyLookup>(item) : undefined;
}

export async function findApiKeyById(keyId: string): Promise<ApiKeyRecord | undefined> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: apiKeyKeys.byIdIndex,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': table.indexes[apiKeyKeys.byIdIndex].partitionKey },
      ExpressionAttributeValues: { ':pk': apiKeyKeys.byId(keyId).gsi1pk },
    }),
  );
  const item = Items?.[0];
  return item ? entityOf<ApiKeyRecord>(item) : undefined;
}

export async function listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': apiKeyKeys.accountPartition(accountId) },
    ConsistentRead: true,
  });
  return items.map((item) => entityOf<ApiKeyRecord>(item));
}

/** Marks both items of a key revoked; revoking an already revoked key keeps its first revocation time. */
export async function revokeApiKey(record: ApiKeyRecord, at: Timestamp): Promise<Timestamp> {
  if (record.revokedAt) return record.revokedAt;
  const update = { UpdateExpression: 'SET revokedAt = :at', ExpressionAttributeValues: { ':at': at } };
  await transact([
    { Update: { TableName: tableName(), Key: apiKeyKeys.lookup(record.hash), ...update } },
    {
      Update: { TableName: tableName(), Key: apiKeyKeys.record(record.accountId, record.id), ...update },
    },
  ]);
  return at;
}

/**
 * Records that a key was used. Written at most once per `minIntervalSeconds` per key (the condition makes
 * concurrent cache misses write once), so the authorizer's hot path rarely writes at all.
 */
export async function touchApiKey(lookup: ApiKeyLookup, hash: string, at: Timestamp, notAfter: Timestamp) {
  const condition = {
    ConditionExpression: 'attribute_not_exists(lastUsedAt) OR lastUsedAt = :null OR lastUsedAt < :notAfter',
    UpdateExpression: 'SET lastUsedAt = :at',
    ExpressionAttributeValues: { ':at': at, ':notAfter': notAfter, ':null': null },
  };
  try {
    await Promise.all([
      dynamo.send(new UpdateCommand({ TableName: tableName(), Key: apiKeyKeys.lookup(hash), ...condition })),
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: apiKeyKeys.record(lookup.accountId, lookup.keyId),
          ...condition,
        }),
      ),
    ]);
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}
