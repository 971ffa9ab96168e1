import type { ImportSource, ImportType } from '#lib/imports/records.ts';
import { keyedValue } from '../index/keyed.ts';
import { importKeys } from '../keys.ts';
import { batchGetAll, tableName } from '../store/client.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * Source keys (issue 42; docs/imports.md, "Source keys"): how an imported object is found again by `(source, type,
 * source id)`. One item per key, holding our object's id, the import that created it and a digest of the source
 * record as last written (lib/imports/digest.ts): the same record again is `unchanged`, a changed one `updated`.
 * A key is claimed in the object's own commit, on the condition that it does not exist, so two racing runs cannot
 * both create the object; and its digest moves in the commit of the update, on the condition that it is still the
 * digest read, so two racing updates decide again rather than both write.
 */

/** One source object, as a source names it. */
export interface SourceKeyRef {
  source: ImportSource;
  type: ImportType;
  sourceId: string;
}

/** What a source key holds. */
export interface SourceKeyRecord {
  /** Our object's id: an agent's, team's or organization's number, a contact's or ticket's uuid, … */
  objectId: string | number;
  /** The import that created the object (or, `matched`, found it). */
  importId: string;
  /** The object was the account's before (an agent found by e-mail): undo leaves it. */
  matched: boolean;
  /** The source record as last written (lib/imports/digest.ts). */
  digest: string;
  /** The page that claimed the key (`<import id>:<page>`, the import's write mark), when known. */
  claimed?: string | undefined;
  /** The page that wrote the key last (its claim or a digest move), when known. */
  wrote?: string | undefined;
}

/** A claim or a digest move found the key other than expected (another run wrote it): decide again. */
export class SourceKeyMoved extends Error {
  constructor(readonly held: SourceKeyRecord | undefined) {
    super('The source key was written by another run');
  }
}

export const hashed = (accountId: string, ref: SourceKeyRef) =>
  keyedValue(accountId, `${ref.source}:${ref.type}:${ref.sourceId}`);

const keyOf = (accountId: string, ref: SourceKeyRef) =>
  importKeys.sourceKey(accountId, hashed(accountId, ref));

const recordOf = (item: Record<string, unknown> | undefined): SourceKeyRecord | undefined =>
  item
    ? {
        objectId: item.objectId as string | number,
        importId: String(item.importId),
        digest: String(item.digest),
        matched: item.matched === true,
        claimed: typeof item.claimed === 'string' ? item.claimed : undefined,
        wrote: typeof item.wrote === 'string' ? item.wrote : undefined,
      }
    : undefined;

/**
 * What an earlier attempt at this page did to the key (`mark`: the page's write mark, ImportContext.mark): a page
 * written again after a crash finds its own writes, whose counts were never saved (the job's save comes after the
 * page). `created`: the page claimed it; `updated`: the page moved its digest; undefined: another page or run did.
 */
export function replayed(
  found: SourceKeyRecord | undefined,
  mark: string | undefined,
): 'created' | 'updated' | undefined {
  if (!found || mark === undefined) return undefined;
  if (found.claimed === mark) return 'created';
  return found.wrote === mark ? 'updated' : undefined;
}

/**
 * A record's outcome in this attempt (`now`) counted as the page's: what an earlier attempt at the page created stays
 * created, what it updated stays updated (the attempt that finds it done says `unchanged`, or `updated` for the
 * rest of a conversation it appends).
 */
export function pageOutcome<O extends string>(
  found: SourceKeyRecord | undefined,
  mark: string | undefined,
  now: O,
): O | 'created' | 'updated' {
  if (now === 'failed') return now;
  const before = replayed(found, mark);
  if (before === 'created') return before;
  return before === 'updated' && now === 'unchanged' ? before : now;
}

/** The keys found of `sourceIds` (one type of one source), by source id; missing ones are absent. */
export async function findSourceKeys(
  accountId: string,
  source: ImportSource,
  type: ImportType,
  sourceIds: readonly string[],
): Promise<Map<string, SourceKeyRecord>> {
  const byPk = new Map<string, string>();
  for (const sourceId of new Set(sourceIds)) {
    byPk.set(keyOf(accountId, { source, type, sourceId }).pk, sourceId);
  }
  const items = await batchGetAll(
    [...byPk.keys()].map((pk) => ({ pk, sk: 'IMPORTED' })),
    'pk, objectId, importId, digest, matched, claimed, wrote',
  );
  const found = new Map<string, SourceKeyRecord>();
  for (const item of items) {
    const sourceId = byPk.get(String(item.pk));
    const record = recordOf(item);
    if (sourceId !== undefined && record) found.set(sourceId, record);
  }
  return found;
}

/**
 * The types whose created objects undo takes out (lib/imports/undo.ts, UNDO_ORDER): only their keys get the gsi1
 * entry it walks. A message goes with its ticket, and one appended to a ticket the import only updated stays, as the
 * update does: a message's entry was never read, and an import wrote ~6 entries a ticket to its one gsi1 partition
 * where it now writes 1 (docs/capacity.md, "Imports").
 */
export const UNDONE_TYPES: ReadonlySet<ImportType> = new Set<ImportType>([
  'tickets',
  'contacts',
  'organizations',
  'teams',
  'agents',
]);

/**
 * Takes a source key for an object being created (or, `matched`, found by e-mail), in the object's commit: refused (SourceKeyMoved, with the key as
 * held) when the key exists, so the object is not created twice. A created object of a type undo takes out gets its
 * gsi1 entry (UNDONE_TYPES).
 */
export function claimSourceKey(
  accountId: string,
  ref: SourceKeyRef,
  record: SourceKeyRecord,
  mark?: string,
): CommitAction {
  const hash = hashed(accountId, ref);
  return {
    what: 'source_key',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...importKeys.sourceKey(accountId, hash),
          ...(record.matched || !UNDONE_TYPES.has(ref.type)
            ? {}
            : importKeys.createdBy(accountId, record.importId, ref.type, hash)),
          type: 'imported',
          source: ref.source,
          sourceType: ref.type,
          ...record,
          ...(mark === undefined ? {} : { claimed: mark, wrote: mark }),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => new SourceKeyMoved(recordOf(held)),
  };
}

/**
 * Moves a source key's digest to `digest`, in the commit of the object's update: refused (SourceKeyMoved) unless the
 * key still holds `read`, the digest the update was decided from. `mark`: the page writing it (a move that changes
 * nothing of the object gives none).
 */
export function touchSourceKey(
  accountId: string,
  ref: SourceKeyRef,
  read: string,
  digest: string,
  mark?: string,
): CommitAction {
  return {
    what: 'source_key',
    action: {
      Update: {
        TableName: tableName(),
        Key: keyOf(accountId, ref),
        UpdateExpression: mark === undefined ? 'SET digest = :digest' : 'SET digest = :digest, wrote = :mark',
        ConditionExpression: 'digest = :read',
        ExpressionAttributeValues: {
          ':digest': digest,
          ':read': read,
          ...(mark === undefined ? {} : { ':mark': mark }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => new SourceKeyMoved(recordOf(held)),
  };
}

/**
 * A team's pending members (issue 42): the agents whose source record names the team, kept beside its source key
 * (an agent is imported before its teams), so the team's own write takes them in. Added to (or, leaving the team,
 * taken from) in the agent's commit.
 */
export function pendingMember(
  accountId: string,
  team: SourceKeyRef,
  agentId: number,
  change: 'ADD' | 'DELETE',
): CommitAction {
  return {
    what: 'pending_members',
    action: {
      Update: {
        TableName: tableName(),
        Key: importKeys.members(accountId, hashed(accountId, team)),
        UpdateExpression: `${change} agentIds :id`,
        ExpressionAttributeValues: { ':id': new Set([agentId]) },
      },
    },
  };
}

/** The pending members of teams (one type `teams` of one source), by team source id. */
export async function findPendingMembers(
  accountId: string,
  source: ImportSource,
  teamSourceIds: readonly string[],
): Promise<Map<string, number[]>> {
  const byPk = new Map<string, string>();
  for (const sourceId of new Set(teamSourceIds)) {
    byPk.set(
      importKeys.members(accountId, hashed(accountId, { source, type: 'teams', sourceId })).pk,
      sourceId,
    );
  }
  const items = await batchGetAll([...byPk.keys()].map((pk) => ({ pk, sk: 'MEMBERS' })));
  const found = new Map<string, number[]>();
  for (const item of items) {
    const sourceId = byPk.get(String(item.pk));
    const ids = item.agentIds instanceof Set ? [...item.agentIds].map(Number) : [];
    if (sourceId !== undefined)
      found.set(
        sourceId,
        ids.sort((a, b) => a - b),
      );
  }
  return found;
}
