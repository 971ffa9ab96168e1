import type { IndexName } from '../../store/table.ts';
import { dueShardOf } from '../../webhooks/due-shards.ts';
import { dueMs } from '../sort.ts';
import { orderKeys } from './order.ts';
import { postingKeys, statsKeys } from './postings.ts';

/**
 * The keys of an entity kept by the index engine (lib/data/index/), `entity` naming it in every partition
 * (`TICKET` → `TICKETS#…`, `TICKET_INDEX#…`). Its items sort by order key in one partition per account; every
 * list dimension (a status, a custom field value, a queue) has a posting partition of small items keyed by order
 * key and a counter, and every one but `all` also has packed blocks (./postings.ts); search terms share one
 * partition. See docs/data-model.md.
 */
export function indexKeys(entity: string) {
  return {
    ...itemKeys(entity),
    ...statsKeys(entity),
    ...postingKeys(entity),
    ...termKeys(entity),
    ...directoryKeys(entity),
    ...dueKeys(entity),
    ...sortedKeys(entity),
    ...pendingKeys(entity),
  };
}

/**
 * Creates under way (lib/data/index/pending.ts): one small item per create that writes its new index items before
 * its commit, put before them and deleted by the commit (`TICKET_PENDING#<acc>` / its id).
 */
function pendingKeys(entity: string) {
  const pendingPartition = (accountId: string) => `${entity}_PENDING#${accountId}`;
  return {
    pendingPartition,
    pending: (accountId: string, id: string) => ({ pk: pendingPartition(accountId), sk: id }),
  };
}

/**
 * Entities whose items are spread over partitions of their account, and over how many: a ticket's item is in
 * `TICKETS#<acc>#<number mod 8>` (issue 40). In one partition, every create appended at its newest end, a tail no
 * partition split relieves: 100 creates/s of a 4–5 KB ticket were 800–1,000 WU/s on a partition's 1,000, before
 * any update of a recent ticket. Spread, each takes an eighth. Deals and contacts keep one (`DEALS#<acc>`).
 */
const ITEM_SHARDS: Record<string, number> = { TICKET: 8 };

function itemKeys(entity: string) {
  const shards = ITEM_SHARDS[entity];
  /** The one partition of an entity kept in one, and of every entity before issue 40. */
  const legacyItemPartition = (accountId: string) => `${entity}S#${accountId}`;
  const itemPartition = (accountId: string, shard: number) =>
    shards === undefined ? legacyItemPartition(accountId) : `${entity}S#${accountId}#${shard}`;
  return {
    /** Every partition of the account's entity items, newest first within each (a list merges them). */
    itemPartitions: (accountId: string) =>
      Array.from({ length: shards ?? 1 }, (_, shard) => itemPartition(accountId, shard)),
    /** Where items of earlier releases are, when it is not among itemPartitions (the reindex moves them). */
    movedItemPartition: (accountId: string) =>
      shards === undefined ? undefined : legacyItemPartition(accountId),
    item: (accountId: string, orderKey: string) => ({
      pk: itemPartition(accountId, orderKeys.parts(orderKey).number % (shards ?? 1)),
      sk: orderKey,
    }),
  };
}

export type IndexKeys = ReturnType<typeof indexKeys>;

/**
 * Search terms: prefixes of words (`p#`) and numbers (`n#`), in TERM_SHARDS partitions per account
 * (`TICKET_TERMS#<acc>#<0–15>`), so that no one partition takes every create's terms (a ticket puts ~13, 26 write
 * units: 100 creates/s were 2,600 WU/s on one key of 1,000; issue 40). A prefix term's shard follows from the
 * keyed hash of its first two characters (the first TERM_SHARD_CHARS of its key: termShard), so every term a
 * search word of two characters or more can match is in one shard, which a search reads as it read the one
 * partition (one Query, the same budget); a word of one character reads every shard. A number's term is in shard
 * `number mod TERM_SHARDS`. Releases before issue 40 kept every term in `<entity>_TERMS#<acc>`
 * (legacyTermsPartition): the reindex moves them.
 */
export const TERM_SHARDS = 16;
/** Characters of a keyed term that name its shard: its first two characters' (keyed.ts: 11 a character). */
const TERM_SHARD_CHARS = 22;
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The shard of the terms a keyed word or term starts with: from its first two characters' keyed hash (a character
 * of it: 64 values, uniform, 16 shards a quarter of them each); undefined for a one-character word, whose terms
 * may be in any shard. A one-character term is put in shard 0.
 */
export function termShard(keyed: string): number | undefined {
  if (keyed.length < TERM_SHARD_CHARS) return undefined;
  return BASE64URL.indexOf(keyed.charAt(TERM_SHARD_CHARS - 1)) % TERM_SHARDS;
}

function termKeys(entity: string) {
  const termsPartition = (accountId: string, shard: number) => `${entity}_TERMS#${accountId}#${shard}`;
  const samplePartition = (accountId: string) => `${entity}_TERMS_SAMPLE#${accountId}`;
  return {
    termsPartition,
    /** Every shard's partition, in shard order. */
    termsPartitions: (accountId: string) =>
      Array.from({ length: TERM_SHARDS }, (_, shard) => termsPartition(accountId, shard)),
    /** The partitions a keyed search word's terms are in: its shard, or every one for a one-character word. */
    termsPartitionsOfWord: (accountId: string, keyedWord: string) => {
      const shard = termShard(keyedWord);
      return shard === undefined
        ? Array.from({ length: TERM_SHARDS }, (_, s) => termsPartition(accountId, s))
        : [termsPartition(accountId, shard)];
    },
    /** The account's sample of its prefix terms (lib/data/index/term-sample.ts): one partition. */
    termSamplePartition: (accountId: string) => samplePartition(accountId),
    /** A prefix term's copy in the sample: the term's sort key in the sample partition. */
    sampleTerm: (accountId: string, keyedTerm: string, orderKey: string) => ({
      pk: samplePartition(accountId),
      sk: `p#${keyedTerm}#${orderKey}`,
    }),
    /** The one partition of earlier releases, which only the reindex still reads (to delete what it holds). */
    legacyTermsPartition: (accountId: string) => `${entity}_TERMS#${accountId}`,
    prefixTerm: (accountId: string, keyedTerm: string, orderKey: string) => ({
      pk: termsPartition(accountId, termShard(keyedTerm) ?? 0),
      sk: `p#${keyedTerm}#${orderKey}`,
    }),
    prefixTermQuery: (term: string) => `p#${term}`,
    numberTerm: (accountId: string, number: string, orderKey: string) => ({
      pk: termsPartition(accountId, Number(number) % TERM_SHARDS),
      sk: `n#${number}#${orderKey}`,
    }),
    /** The partition of a number's term. */
    numberTermPartition: (accountId: string, number: number) =>
      termsPartition(accountId, number % TERM_SHARDS),
    numberTermQuery: (number: string) => `n#${number}#`,
  };
}

/** A term item's sort key (`p#<term>#<order key>` or `n#<number>#<order key>`) read back. */
export function parseTermKey(sk: string): { term: string; orderKey: string } {
  return {
    term: sk.slice(2, sk.length - orderKeys.length - 1),
    orderKey: sk.slice(sk.length - orderKeys.length),
  };
}

/**
 * The account's directory of dimensions: an item per dimension whose posting or block partition the index
 * ever wrote (put before or with the first write there), so the reindex finds every index partition of
 * the account by Query, never by Scan. Dimension names start with a letter and sort after the progress item.
 */
function directoryKeys(entity: string) {
  const directoryPartition = (accountId: string) => `${entity}_DIMENSIONS#${accountId}`;
  return {
    directoryPartition,
    directoryEntry: (accountId: string, dimension: string) => ({
      pk: directoryPartition(accountId),
      sk: dimension,
    }),
    /** The reindex's progress (phase and cursor) while one is under way: `tickets reindex` continues from it. */
    reindexProgress: (accountId: string) => ({ pk: directoryPartition(accountId), sk: '#REINDEX' }),
  };
}

/**
 * An entity's due entry (a ticket's soonest service-level due time still to watch), on the entity item itself
 * in the keys-only due index (gsi2): one of DUE_SHARDS partitions by a hash of account and order key, sorted by
 * the due time (epoch ms, 15 digits). The entity's Put writes, moves or drops it: it is derived from the
 * entity by its declaration (IndexDeclaration.due), in the same commit as every change.
 */
function dueKeys(entity: string) {
  return {
    due: (accountId: string, orderKey: string, dueMicros: number) => ({
      gsi2pk: `${entity}_DUE#${dueShardOf(accountId, orderKey)}`,
      gsi2sk: `${dueMs(dueMicros / 1000)}#${accountId}#${orderKey}`,
    }),
    duePartition: (shard: number) => `${entity}_DUE#${shard}`,
    dueIndex: 'gsi2' as IndexName,
    /** The due sort key bound of the entries due at or before `atMs` (gsi2sk < this). */
    dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
    /** A due entry's sort key read back. */
    parseDue: (sk: string) => {
      const [due, accountId] = sk.split('#');
      return {
        dueMs: Number(due),
        accountId: accountId ?? '',
        orderKey: sk.slice(sk.length - orderKeys.length),
      };
    },
  };
}

/**
 * A sorted posting (IndexDeclaration.sorts): in one partition per sort and dimension (`all` and the bounded
 * ones), sorted by the entity's sort value, then newest first (the order key with every digit complemented).
 */
function sortedKeys(entity: string) {
  return {
    sortedPartition: (accountId: string, sort: string, dimension: string) =>
      `${entity}_SORTED#${accountId}#${sort}#${dimension}`,
    sorted: (accountId: string, sort: string, dimension: string, value: string, orderKey: string) => ({
      pk: `${entity}_SORTED#${accountId}#${sort}#${dimension}`,
      sk: `${value}#${complementDigits(orderKey)}`,
    }),
    /** The order key a sorted posting's sort key names. */
    orderKeyOfSorted: (sk: string) => complementDigits(sk.slice(sk.length - orderKeys.length)),
  };
}

/** Every digit d as 9 − d (an order key's digits complemented: ascending is then newest first); its own inverse. */
function complementDigits(key: string): string {
  return key.replace(/[0-9]/g, (d) => String(9 - Number(d)));
}
