import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs } from './sort.ts';

/**
 * Import jobs (docs/imports.md, "Jobs"): one partition per account holding its jobs by id (`imp_` + time-ordered:
 * the list is one Query, newest first) and the account's one active import (`ACTIVE`, naming the job: a
 * conditional put in the create's transaction, deleted by the save that ends the job). A job's error rows are a
 * partition of their own, keyed by the page that found them and their place in it, so a page written again after a
 * crash writes the same keys. A job that is due (queued with its source ready, running, paused until a time) has its
 * entry in gsi2 (keys only, one of DUE_SHARDS partitions, sorted by when it is next due), which the runner reads.
 *
 * And an imported object's source key, one item per `(source, type, source id)`
 * of an account, its own partition (`IMPORTED#<acc>#<keyed hash>` / `IMPORTED`), so a batch of lookups spreads over
 * partitions and a claim is a conditional put of one key. The source id is named by the account's keyed hash
 * (index/keyed.ts, keyedValue): an ndjson id is free text and may be personal data. gsi1 lists the keys an import
 * created, by type (what undo walks).
 */
const partition = (accountId: string) => `IMPORTS#${accountId}`;
const JOB = 'IMPORT#';

export const importKeys = {
  partition,
  /** A source key; `hashed` is keyedValue(accountId, `<source>:<type>:<source id>`). */
  sourceKey: (accountId: string, hashed: string) => ({
    pk: `IMPORTED#${accountId}#${hashed}`,
    sk: 'IMPORTED',
  }),
  /**
   * Beside a source key: validate run `importId` decided that object would be created (lib/data/imports/
   * would-create.ts), so its tickets find it as a run's would.
   */
  wouldCreate: (accountId: string, hashed: string, importId: string) => ({
    pk: `IMPORTED#${accountId}#${hashed}`,
    sk: `VALIDATED#${importId}`,
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
  job: (accountId: string, id: string) => ({ pk: partition(accountId), sk: `${JOB}${id}` }),
  /** The sort key range of the jobs (newest first when read backwards), below `before` when given. */
  jobsBelow: (before: string | null) => ({ from: JOB, to: before === null ? `${JOB}~` : `${JOB}${before}` }),
  active: (accountId: string) => ({ pk: partition(accountId), sk: 'ACTIVE' }),
  errorsPartition: (accountId: string, id: string) => `IMPORT_ERRORS#${accountId}#${id}`,
  error: (accountId: string, id: string, page: number, index: number) => ({
    pk: `IMPORT_ERRORS#${accountId}#${id}`,
    sk: `${String(page).padStart(10, '0')}#${String(index).padStart(4, '0')}`,
  }),
  /** The ticket numbers a page of new tickets reserved (lib/data/imports/page-numbers.ts): its write mark's page. */
  pageNumbers: (accountId: string, id: string, page: string) => ({
    pk: `IMPORT_NUMBERS#${accountId}#${id}`,
    sk: page.padStart(10, '0'),
  }),
  due: (accountId: string, id: string, atMs: number) => ({
    gsi2pk: `IMPORT_DUE#${dueShardOf(accountId, id)}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}#${id}`,
  }),
  duePartition: (shard: number) => `IMPORT_DUE#${shard}`,
  dueIndex: 'gsi2' as IndexName,
  dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parseDue: (sk: string) => {
    const [, accountId, id] = sk.split('#');
    return { accountId: accountId ?? '', id: id ?? '' };
  },
};
