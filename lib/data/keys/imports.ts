import type { IndexName } from '../store/table.ts';

/**
 * Imports (issue 42; docs/imports.md): an imported object's source key, one item per `(source, type, source id)`
 * of an account, its own partition (`IMPORTED#<acc>#<keyed hash>` / `IMPORTED`), so a batch of lookups spreads over
 * partitions and a claim is a conditional put of one key. The source id is named by the account's keyed hash
 * (index/keyed.ts, keyedValue): an ndjson id is free text and may be personal data. gsi1 lists the keys an import
 * created, by type (what undo walks).
 */
export const importKeys = {
  /** A source key; `hashed` is keyedValue(accountId, `<source>:<type>:<source id>`). */
  sourceKey: (accountId: string, hashed: string) => ({
    pk: `IMPORTED#${accountId}#${hashed}`,
    sk: 'IMPORTED',
  }),
  /** A team's pending members, beside its source key (lib/data/imports/source-keys.ts, pendingMember). */
  members: (accountId: string, hashed: string) => ({ pk: `IMPORTED#${accountId}#${hashed}`, sk: 'MEMBERS' }),
  /** gsi1: the keys import `importId` created, by type. */
  createdBy: (accountId: string, importId: string, type: string, hashed: string) => ({
    gsi1pk: `IMPORT_CREATED#${accountId}#${importId}`,
    gsi1sk: `${type}#${hashed}`,
  }),
  createdByPartition: (accountId: string, importId: string) => `IMPORT_CREATED#${accountId}#${importId}`,
  createdByIndex: 'gsi1' as IndexName,
};
