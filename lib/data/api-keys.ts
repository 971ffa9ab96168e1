import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { EVERY_SCOPE, type Grant } from '#lib/accounts/scopes.ts';
import type { ApiKeyRecord } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';
import { dynamo, getItem, queryAll, tableName } from './client.ts';
import { isConditionFailure, StaleVersion } from './errors.ts';
import { type CommitAttachment, completionCommit } from './idempotency.ts';
import { entityOf } from './items.ts';
import { apiKeyKeys } from './keys.ts';
import { table } from './table.ts';
import { type CommitAction, commit } from './transact.ts';

/** What the authorizer needs from a key, in a single GetItem by the key's hash. */
export interface ApiKeyLookup {
  keyId: string;
  accountId: string;
  /** The hash the item is keyed by, for the authorizer's constant-time check. */
  hash: string;
  scopes: Grant[];
  expiresAt: Timestamp | null;
  revokedAt: Timestamp | null;
}

/** Stored attributes of a lookup item; items made before scopes have neither `scopes` nor `expiresAt`. */
interface LookupItem {
  keyId: string;
  accountId: string;
  scopes?: Grant[];
  expiresAt?: Timestamp | null;
  revokedAt: Timestamp | null;
}

/** A record as stored: one made before scopes has no name, scopes or expiry, and counts as `*` forever. */
function recordOf(item: Record<string, unknown>): ApiKeyRecord {
  const stored = entityOf<Partial<ApiKeyRecord> & ApiKeyRecord>(item);
  return {
    ...stored,
    name: stored.name ?? null,
    scopes: stored.scopes ?? [EVERY_SCOPE],
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
    scopes: stored.scopes ?? [EVERY_SCOPE],
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

/**
 * An account's keys as a create must see them: the key-set version first, then the records (a create that
 * lands after the version was read changes it, so the write guarded by it fails; one that landed before is in
 * the records). 2 round trips.
 */
export async function readKeySet(accountId: string): Promise<{ version: number; keys: ApiKeyRecord[] }> {
  const guard = await getItem(apiKeyKeys.guard(accountId));
  return { version: Number(guard?.version ?? 0), keys: await listApiKeys(accountId) };
}

function lookupItem(record: ApiKeyRecord) {
  const lookup: LookupItem = {
    keyId: record.id,
    accountId: record.accountId,
    scopes: record.scopes,
    expiresAt: record.expiresAt,
    revokedAt: null,
  };
  return { ...apiKeyKeys.lookup(record.hash), type: 'api_key_lookup', ...lookup };
}

/** A change to an account's key set: a new key, and for a rotation the old key's new (earlier) expiry. */
export interface KeySetChange {
  /** The key-set version read (readKeySet): the write holds only if it is still the version. */
  version: number;
  created: ApiKeyRecord;
  expire?: { record: ApiKeyRecord; at: Timestamp };
}

/**
 * Writes a new key (its lookup and its record) and bumps the key-set version, with a rotated key's new expiry and
 * its successor's id, all or nothing in one transaction (3 items, 5 with a rotation; and the Idempotency-Key's
 * kept answer, when attached). StaleVersion: another change landed since the version was read; read again and
 * decide again.
 */
export async function commitKeySetChange(change: KeySetChange, attachment?: CommitAttachment): Promise<void> {
  const { created } = change;
  const stale = () => new StaleVersion();
  const actions: CommitAction[] = [
    {
      what: 'guard',
      action: {
        Update: {
          TableName: tableName(),
          Key: apiKeyKeys.guard(created.accountId),
          UpdateExpression: 'SET version = :next, #type = :type',
          ConditionExpression: change.version === 0 ? 'attribute_not_exists(version)' : 'version = :version',
          ExpressionAttributeNames: { '#type': 'type' },
          ExpressionAttributeValues: {
            ':next': change.version + 1,
            ':type': 'api_key_set',
            ...(change.version === 0 ? {} : { ':version': change.version }),
          },
        },
      },
      refused: stale,
    },
    {
      what: 'lookup',
      action: {
        Put: {
          TableName: tableName(),
          Item: lookupItem(created),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
    {
      what: 'record',
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...apiKeyKeys.record(created.accountId, created.id),
            ...apiKeyKeys.byId(created.id),
            type: 'api_key',
            ...created,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
  ];
  if (change.expire) {
    const { record, at } = change.expire;
    // Still live as read: a revocation that landed in between wins (and is read again).
    const live = 'attribute_exists(pk) AND (attribute_not_exists(revokedAt) OR revokedAt = :null)';
    actions.push(
      {
        what: 'rotated lookup',
        action: {
          Update: {
            TableName: tableName(),
            Key: apiKeyKeys.lookup(record.hash),
            UpdateExpression: 'SET expiresAt = :at',
            ConditionExpression: live,
            ExpressionAttributeValues: { ':at': at, ':null': null },
          },
        },
        refused: stale,
      },
      {
        what: 'rotated record',
        action: {
          Update: {
            TableName: tableName(),
            Key: apiKeyKeys.record(record.accountId, record.id),
            // The record names its successor: a key rotates once (a second rotation is refused).
            UpdateExpression: 'SET expiresAt = :at, rotatedTo = :to',
            ConditionExpression: `${live} AND attribute_not_exists(rotatedTo)`,
            ExpressionAttributeValues: { ':at': at, ':null': null, ':to': created.id },
          },
        },
        refused: stale,
      },
    );
  }
  await commit([...actions, ...completionCommit(attachment)]);
}

/**
 * Marks both items of a key revoked, in one transaction; revoking an already revoked key keeps its first
 * revocation time (and writes nothing).
 */
export async function revokeApiKey(
  record: ApiKeyRecord,
  at: Timestamp,
  attachment?: (revokedAt: Timestamp) => CommitAttachment | undefined,
): Promise<Timestamp> {
  if (record.revokedAt) return record.revokedAt;
  const update = { UpdateExpression: 'SET revokedAt = :at', ExpressionAttributeValues: { ':at': at } };
  await commit([
    {
      what: 'lookup',
      action: { Update: { TableName: tableName(), Key: apiKeyKeys.lookup(record.hash), ...update } },
    },
    {
      what: 'record',
      action: {
        Update: { TableName: tableName(), Key: apiKeyKeys.record(record.accountId, record.id), ...update },
      },
    },
    ...completionCommit(attachment?.(at)),
  ]);
  return at;
}

/**
 * Records that a key was used, on its record only (the lookup item the authorizer reads is never written for
 * it): the condition makes every writer after the first within `notAfter` a no-op, so the record changes at most
 * once a minute per key however many containers miss the cache at once.
 */
export async function touchApiKey(accountId: string, keyId: string, at: Timestamp, notAfter: Timestamp) {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: apiKeyKeys.record(accountId, keyId),
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(lastUsedAt) OR lastUsedAt = :null OR lastUsedAt < :notAfter)',
        UpdateExpression: 'SET lastUsedAt = :at',
        ExpressionAttributeValues: { ':at': at, ':notAfter': notAfter, ':null': null },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}
