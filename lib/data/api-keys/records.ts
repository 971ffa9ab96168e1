import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';
import { apiKeyKeys } from '../keys.ts';
import { dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { entityOf } from '../store/items.ts';
import { table } from '../store/table.ts';

/**
 * An API key's two items read (docs/api-keys.md): its lookup item, keyed by the key's hash (the authorizer's one
 * GetItem), and its record in its account's partition (the key management routes, the admin command line).
 */

type Grants = ApiKeyRecord['scopes'];

/** A key made before scopes holds every scope (decisions.md, "API keys"): `*`, as its record reads. */
const BEFORE_SCOPES: Grants = ['*'];

/** What the authorizer needs from a key, in a single GetItem by the key's hash. */
export interface ApiKeyLookup {
  keyId: string;
  accountId: string;
  /** The hash the item is keyed by, for the authorizer's constant-time check. */
  hash: string;
  scopes: Grants;
  expiresAt: Timestamp | null;
  revokedAt: Timestamp | null;
}

/** Stored attributes of a lookup item; items made before scopes have neither `scopes` nor `expiresAt`. */
export interface LookupItem {
  keyId: string;
  accountId: string;
  scopes?: Grants;
  expiresAt?: Timestamp | null;
  revokedAt: Timestamp | null;
}

/** A record as stored: one made before scopes has no name, scopes or expiry, and counts as `*` forever. */
function recordOf(item: Record<string, unknown>): ApiKeyRecord {
  const stored = entityOf<Partial<ApiKeyRecord> & ApiKeyRecord>(item);
  return {
    ...stored,
    name: stored.name ?? null,
    scopes: stored.scopes ?? [...BEFORE_SCOPES],
    expiresAt: stored.expiresAt ?? null,
    lastUsedAt: stored.lastUsedAt ?? null,
    revokedAt: stored.revokedAt ?? null,
  };
}

export async function findApiKeyByHash(hash: string): Promise<ApiKeyLookup | undefined> {
  const item = await getItem(apiKeyKeys.lookup(hash), { eventual: true });
  if (!item) return undefined;
  const stored = entityOf<LookupItem>(item);
  return {
    keyId: stored.keyId,
    accountId: stored.accountId,
    hash: apiKeyKeys.hashOfLookup(String(item.pk)),
    scopes: stored.scopes ?? [...BEFORE_SCOPES],
    expiresAt: stored.expiresAt ?? null,
    revokedAt: stored.revokedAt ?? null,
  };
}

/** A key of an account by its id (a key of another account is not found). */
export async function getApiKey(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const item = await getItem(apiKeyKeys.record(accountId, keyId));
  return item ? recordOf(item) : undefined;
}

/** A key by its id alone, whatever its account (the admin command line's `keys revoke KEY_ID`). */
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
  return item ? recordOf(item) : undefined;
}

export async function listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :records)',
    ExpressionAttributeValues: {
      ':pk': apiKeyKeys.accountPartition(accountId),
      ':records': apiKeyKeys.recordPrefix,
    },
    ConsistentRead: true,
  });
  return items.map(recordOf);
}
