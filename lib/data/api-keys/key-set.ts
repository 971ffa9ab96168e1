import type { ApiKeyRecord } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';
import { apiKeyKeys } from '../keys.ts';
import { type CommitAttachment, completionCommit } from '../requests/idempotency.ts';
import { getItem, tableName } from '../store/client.ts';
import { StaleVersion } from '../store/errors.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { type LookupItem, listApiKeys } from './records.ts';

/**
 * An account's key set changed as one: a new key (a create, or a rotation's successor) written only while the
 * key-set version is the one its decision read, so the count of live keys it decided on stays exact under
 * concurrency (docs/api-keys.md, "At most 100 live keys an account").
 */

/**
 * An account's keys as a create must see them: the key-set version first, then the records (a create that
 * lands after the version was read changes it, so the write guarded by it fails; one that landed before is in
 * the records). 2 round trips.
 */
export async function readKeySet(accountId: string): Promise<{ version: number; keys: ApiKeyRecord[] }> {
  const guard = await getItem(apiKeyKeys.guard(accountId));
  return { version: Number(guard?.version ?? 0), keys: await listApiKeys(accountId) };
}

/** A change to an account's key set: a new key, and for a rotation the old key's new (earlier) expiry. */
export interface KeySetChange {
  /** The key-set version read (readKeySet): the write holds only if it is still the version. */
  version: number;
  created: ApiKeyRecord;
  expire?: { record: ApiKeyRecord; at: Timestamp };
}

/** Another change landed since the version was read (or the rotated key changed): read again, decide again. */
const stale = () => new StaleVersion();

/**
 * Writes a new key (its lookup and its record) and bumps the key-set version, with a rotated key's new expiry and
 * its successor's id, all or nothing in one transaction (3 items, 5 with a rotation; and the Idempotency-Key's
 * kept answer, when attached). StaleVersion: another change landed since the version was read; read again and
 * decide again.
 */
export async function commitKeySetChange(change: KeySetChange, attachment?: CommitAttachment): Promise<void> {
  const actions: CommitAction[] = [
    versionBump(change),
    ...newKeyItems(change.created),
    ...(change.expire ? rotation(change.expire, change.created) : []),
  ];
  await commit([...actions, ...completionCommit(attachment)]);
}

/** The key-set version moved on from the one read (written first: its condition is the change's guard). */
function versionBump(change: KeySetChange): CommitAction {
  return {
    what: 'guard',
    action: {
      Update: {
        TableName: tableName(),
        Key: apiKeyKeys.guard(change.created.accountId),
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
  };
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

/** The new key's lookup item (by its hash) and record (in its account's partition, found by its id too). */
function newKeyItems(created: ApiKeyRecord): CommitAction[] {
  return [
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
}

/** A rotated key's new expiry, on both its items, and its record naming its successor. */
function rotation(expire: NonNullable<KeySetChange['expire']>, created: ApiKeyRecord): CommitAction[] {
  const { record, at } = expire;
  // Still live as read: a revocation that landed in between wins (and is read again).
  const live = 'attribute_exists(pk) AND (attribute_not_exists(revokedAt) OR revokedAt = :null)';
  return [
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
  ];
}
