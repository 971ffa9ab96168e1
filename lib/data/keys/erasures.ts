import type { IndexName } from '../store/table.ts';
import { DUE_SHARDS, dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs } from './sort.ts';

/**
 * Object references (decisions.md, "Deleting, restoring and erasing"): the items outside an object's own
 * partitions that hold a copy of it (its events, a kept idempotent answer, an inbound mail's log entry) carry a
 * keys-only gsi2 entry in the object's reference partition, so an erasure finds them by one Query per object,
 * never by a Scan. `kind` names the item kind (`event`, `idempotency`, `inbound`), `sk` the item's own sort key.
 */
export const objectRefKeys = {
  partition: (accountId: string, objectUuid: string) => `OBJECT_REFS#${accountId}#${objectUuid}`,
  ref: (accountId: string, objectUuid: string, kind: string, sk: string) => ({
    gsi2pk: objectRefKeys.partition(accountId, objectUuid),
    gsi2sk: `${kind}#${sk}`,
  }),
  index: 'gsi2' as IndexName,
};

/**
 * Person references (docs/data-model.md, "Erasures"): where a person's address is on a mail that nothing else
 * finds by it (a reply on, or a copy of, a ticket someone else requested; a mail that opened no ticket). The
 * partition is named by the address's keyed hash (lib/erasures/address-hash.ts), never the address; its gsi2
 * (keys only) holds a small ref item per ticket (`ticket#<uuid>`, also its base key) and the inbound log entry
 * itself of a mail that opened no ticket (`inbound#<inbound id>`), so an erasure reads them all by one Query.
 */
export const personRefKeys = {
  partition: (accountId: string, hash: string) => `PERSON_REFS#${accountId}#${hash}`,
  /** The ref item of a ticket: base key and gsi2 key alike. */
  ticket: (accountId: string, hash: string, ticketUuid: string) => ({
    pk: personRefKeys.partition(accountId, hash),
    sk: `ticket#${ticketUuid}`,
    gsi2pk: personRefKeys.partition(accountId, hash),
    gsi2sk: `ticket#${ticketUuid}`,
  }),
  /** The gsi2 keys of an inbound log entry of a mail that opened no ticket (on the entry itself). */
  inbound: (accountId: string, hash: string, inboundId: string) => ({
    gsi2pk: personRefKeys.partition(accountId, hash),
    gsi2sk: `inbound#${inboundId}`,
  }),
  index: 'gsi2' as IndexName,
};

/**
 * Erasures (decisions.md, "Deleting, restoring and erasing"; docs/data-model.md, "Erasures"): the `Erasure`
 * record the API answers (a keyed hash of the address, never the address), its job's progress item while it runs,
 * the running erasure's due entry (gsi2, keys only, one of DUE_SHARDS partitions: what the runner reads, never a
 * Scan), and the ledger of completed erasures (hashes only) that `erasures replay` applies again after a restore.
 */
export const erasureKeys = {
  partition: (accountId: string) => `ERASURES#${accountId}`,
  record: (accountId: string, id: string) => ({ pk: `ERASURES#${accountId}`, sk: id }),
  progress: (accountId: string, id: string) => ({ pk: `ERASURES#${accountId}`, sk: `${id}#PROGRESS` }),
  /** A ticket or deal the erasure changed (its uuid only), until `contact.erased` named it. */
  touched: (accountId: string, id: string, type: string, uuid: string) => ({
    pk: `ERASURES#${accountId}`,
    sk: `${id}#TOUCHED#${type}#${uuid}`,
  }),
  touchedPrefix: (id: string) => `${id}#TOUCHED#`,
  /**
   * A dimension the erasure's rewrites took an object out of whose value named the person (a custom field
   * holding their name), as keys name it (a keyed hash), until the erasure deleted what it leaves once empty.
   */
  left: (accountId: string, id: string, entity: string, dimension: string) => ({
    pk: `ERASURES#${accountId}`,
    sk: `${id}#LEFT#${entity}#${dimension}`,
  }),
  leftPrefix: (id: string) => `${id}#LEFT#`,
  due: (accountId: string, id: string, dueAtMs: number) => ({
    gsi2pk: `ERASURE_DUE#${dueShardOf(accountId, id)}`,
    gsi2sk: `${dueMs(dueAtMs)}#${accountId}#${id}`,
  }),
  duePartition: (shard: number) => `ERASURE_DUE#${shard}`,
  dueIndex: 'gsi2' as IndexName,
  dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parseDue: (sk: string) => {
    const [, accountId, id] = sk.split('#');
    return { accountId: accountId ?? '', id: id ?? '' };
  },
  /**
   * The ledger: an entry per completed erasure in its account's partition (sk: the erasure's id), and, on the entry
   * itself, its place in the ledger's listing (gsi2, keys only): one of DUE_SHARDS partitions by a hash of account and
   * id, as the due entries are, so `erasures replay` finds every account with entries by 16 Queries, never a Scan,
   * and no key is shared by every account (docs/capacity.md, "Derived shards").
   */
  ledgerPartition: (accountId: string) => `ERASURE_LEDGER#${accountId}`,
  ledger: (accountId: string, id: string) => ({
    pk: `ERASURE_LEDGER#${accountId}`,
    sk: id,
    gsi2pk: `ERASURE_LEDGERS#${dueShardOf(accountId, id)}`,
    gsi2sk: `${accountId}#${id}`,
  }),
  ledgerShards: Array.from({ length: DUE_SHARDS }, (_, shard) => `ERASURE_LEDGERS#${shard}`),
  ledgerIndex: 'gsi2' as IndexName,
  /** The account a listing entry names (its gsi2sk: `<acc>#<id>`). */
  accountOfListed: (gsi2sk: string) => gsi2sk.slice(0, gsi2sk.lastIndexOf('#')),
  /**
   * The one partition every completed erasure was written in before (`<acc>#<id>` its sort key): read beside the
   * new keys and moved out of by the erasure runner until 2027-03-31 (docs/deploy.md, "The erasure ledger's keys").
   */
  legacyLedgerPartition: 'ERASURE_LEDGER',
};
