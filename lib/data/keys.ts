import { DUE_SHARDS, dueShardOf } from './due-shards.ts';
import { keyedValue } from './index/keyed.ts';
import type { IndexName } from './table.ts';

/**
 * Key builders: the only code that writes a key string. Every item's pk/sk (and index keys) come from here,
 * next to a short note of what the item is. The layout is explained in docs/data-model.md.
 */

/** Integer ids are zero-padded in sort keys so that lexical order is numeric order. */
export const padId = (id: number): string => String(id).padStart(10, '0');

const accountPartition = (accountId: string) => `ACCOUNT#${accountId}`;

export const accountKeys = {
  /** The account itself: name, plan, settings, business hours, SLA policies. */
  account: (accountId: string) => ({ pk: accountPartition(accountId), sk: 'ACCOUNT' }),
  /** Every configuration item of an account shares this partition (read in one Query). */
  configPartition: accountPartition,
  /** Uniqueness of the account slug, and slug → id. */
  slug: (slug: string) => ({ pk: `ACCOUNT_SLUG#${slug}`, sk: 'ACCOUNT_SLUG' }),
  /** Atomic counters that hand out integer ids; kept apart from the config so config reads stay cold. */
  sequences: (accountId: string) => ({ pk: `SEQUENCES#${accountId}`, sk: 'SEQUENCES' }),
  /** The account's request count of the current minute (lib/data/rate-limit.ts): written by every request. */
  rate: (accountId: string) => ({ pk: `RATE#${accountId}`, sk: 'RATE' }),
  /** A round-robin cursor: one small item per candidate set, named by a digest of the set (lib/data/sequences.ts). */
  roundRobin: (accountId: string, setDigest: string) => ({
    pk: `ROUND_ROBIN#${accountId}#${setDigest}`,
    sk: 'ROUND_ROBIN',
  }),
};

export const configKeys = {
  team: (accountId: string, id: number) => ({ pk: accountPartition(accountId), sk: `TEAM#${padId(id)}` }),
  agent: (accountId: string, id: number) => ({ pk: accountPartition(accountId), sk: `AGENT#${padId(id)}` }),
  category: (accountId: string, id: number) => ({
    pk: accountPartition(accountId),
    sk: `CATEGORY#${padId(id)}`,
  }),
  pipeline: (accountId: string, id: number) => ({
    pk: accountPartition(accountId),
    sk: `PIPELINE#${padId(id)}`,
  }),
  pipelinePrefix: 'PIPELINE#',
};

const LOOKUP_PREFIX = 'API_KEY#';
const RECORD_PREFIX = 'API_KEY#';

export const apiKeyKeys = {
  /**
   * What the authorizer reads: the key's hash (keyed; SHA-256 for a key made before scopes) → account, scopes,
   * expiry, revocation. The secret itself is never stored. Nothing but a key's own revocation, rotation or
   * expiry writes it: last use is written on the record.
   */
  lookup: (hash: string) => ({ pk: `${LOOKUP_PREFIX}${hash}`, sk: 'API_KEY' }),
  /** The hash a lookup item is keyed by (its constant-time check compares it). */
  hashOfLookup: (pk: string) => (pk.startsWith(LOOKUP_PREFIX) ? pk.slice(LOOKUP_PREFIX.length) : ''),
  /** An account's keys: the records, and the guard item. */
  accountPartition: (accountId: string) => `API_KEYS#${accountId}`,
  record: (accountId: string, keyId: string) => ({
    pk: `API_KEYS#${accountId}`,
    sk: `${RECORD_PREFIX}${keyId}`,
  }),
  recordPrefix: RECORD_PREFIX,
  /**
   * The account's key-set version, bumped by every key created or rotated: a create counts the live keys it read,
   * and its transaction holds only if no other create landed since (the 100-key limit, exact under concurrency).
   */
  guard: (accountId: string) => ({ pk: `API_KEYS#${accountId}`, sk: 'API_KEYS' }),
  /** gsi1: a key record found by its id alone (`keys revoke KEY_ID`). */
  byId: (keyId: string) => ({ gsi1pk: `API_KEY_ID#${keyId}`, gsi1sk: 'API_KEY' }),
  byIdIndex: 'gsi1' as IndexName,
};

export const contactKeys = {
  /**
   * One item per (account, e-mail lower-cased): the uniqueness constraint and the lookup in one. The address is
   * named by the account's keyed hash (lib/data/index/keyed.ts, the erasure record's `hash`): no key holds it.
   */
  byEmail: (accountId: string, email: string) => ({
    pk: `CONTACT#${accountId}#${keyedValue(accountId, email.toLowerCase())}`,
    sk: 'CONTACT',
  }),
};

/**
 * Numbers per block: a dense block holds at most 50 packed keys (about 0.9 KB with its keys, so adding one costs
 * 1 write unit, as a posting's put does).
 */
export const NUMBERS_PER_BLOCK = 50;

/**
 * Blocks side by side in one range of numbers: number n goes to block n mod BLOCK_SPREAD of its range of
 * NUMBERS_PER_BLOCK × BLOCK_SPREAD numbers, so consecutive creates (consecutive numbers) add to different block
 * items and do not meet in their transactions; each block still holds at most NUMBERS_PER_BLOCK keys.
 */
export const BLOCK_SPREAD = 4;

/**
 * Shards of a shared counter: a change adds its deltas to one of COUNTER_SHARDS items (a create to its number
 * mod COUNTER_SHARDS, an update to a random one), and a total is the sum of the shards, read in one Query of
 * their partition. docs/capacity.md ("Sharded counters") says why 32.
 */
export const COUNTER_SHARDS = 32;
const shardSort = (shard: number) => String(shard).padStart(2, '0');
/** The sort key range of every shard of a dimension's counter (and the one `#COUNT` item written before). */
const COUNTER_SK = '#COUNT';

/**
 * Order keys: creation time in epoch microseconds then a per-account number, both zero-padded, so a descending
 * Query is newest first with the number breaking ties. Every entity kept by the index engine is keyed by one.
 */
export const orderKeys = {
  of: (createdMicros: number, number: number) =>
    `${String(createdMicros).padStart(17, '0')}#${String(number).padStart(10, '0')}`,
  /** The creation microseconds and number an order key holds. */
  parts: (orderKey: string) => {
    const [micros, number] = orderKey.split('#');
    return { createdMicros: Number(micros), number: Number(number) };
  },
  length: 28,
  /** Lowest possible order key: postings sort above a dimension's `#COUNT` item. */
  first: '0',
};

/**
 * The keys of an entity kept by the index engine (lib/data/index/), `entity` naming it in every partition
 * (`TICKET` → `TICKETS#…`, `TICKET_INDEX#…`). Its items sort by order key in one partition per account; every
 * list dimension (a status, a custom field value, a queue) has a posting partition of small items keyed by order
 * key and a counter, and every one but `all` also has packed blocks; search terms share one partition. See
 * docs/data-model.md.
 */
export function indexKeys(entity: string) {
  const itemPartition = (accountId: string) => `${entity}S#${accountId}`;
  const postingPartition = (accountId: string, dimension: string) =>
    `${entity}_INDEX#${accountId}#${dimension}`;
  const blockPartition = (accountId: string, dimension: string) =>
    `${entity}_BLOCKS#${accountId}#${dimension}`;
  const termsPartition = (accountId: string) => `${entity}_TERMS#${accountId}`;
  const directoryPartition = (accountId: string) => `${entity}_DIMENSIONS#${accountId}`;
  return {
    itemPartition,
    item: (accountId: string, orderKey: string) => ({ pk: itemPartition(accountId), sk: orderKey }),
    /**
     * A family of stats cells (lib/data/index/declaration.ts, StatsFamily): `counts` (the few-valued counts),
     * `agent` (an agent's open work and assignee count), a deal's `stage`, `stage_board`, …; one partition each.
     */
    statsPartition: (accountId: string, family: string) => `${entity}_STATS#${accountId}#${family}`,
    /** A cell's item: its value, and for a sharded family the shard (`<value>#<shard>`). */
    statsCell: (accountId: string, family: string, value: string, shard: number | undefined) => ({
      pk: `${entity}_STATS#${accountId}#${family}`,
      sk: shard === undefined ? value : `${value}#${shardSort(shard)}`,
    }),
    /** The sort key range of a sharded cell's shards (a value's own, checked on each item: statsCellOf). */
    statsCellRange: (value: string) => ({ from: `${value}#`, to: `${value}#~` }),
    /** The value and shard a stats cell's sort key names. */
    statsCellOf: (sk: string, sharded: boolean) =>
      sharded
        ? { value: sk.slice(0, sk.lastIndexOf('#')), shard: Number(sk.slice(sk.lastIndexOf('#') + 1)) }
        : { value: sk, shard: undefined },
    postingPartition,
    posting: (accountId: string, dimension: string, orderKey: string) => ({
      pk: postingPartition(accountId, dimension),
      sk: orderKey,
    }),
    /**
     * Counter of an unbounded dimension (e-mail, custom field value, queue), in its posting partition: one of
     * COUNTER_SHARDS shards (`#COUNT#07`), below every posting; the total is their sum (counterRange).
     */
    counter: (accountId: string, dimension: string, shard = 0) => ({
      pk: postingPartition(accountId, dimension),
      sk: `${COUNTER_SK}#${shardSort(shard)}`,
    }),
    /** The sort keys of a counter's shards, and of the one `#COUNT` item of earlier releases (still summed). */
    counterRange: { from: COUNTER_SK, to: `${COUNTER_SK}#~` },
    isCounterSort: (sk: string) => sk.startsWith(COUNTER_SK),
    /**
     * A dimension's packed block: the packed order keys (a string set) of its items numbered in one range of
     * NUMBERS_PER_BLOCK × BLOCK_SPREAD with one remainder mod BLOCK_SPREAD (`0000000003#07`; earlier releases
     * wrote one block per NUMBERS_PER_BLOCK, `0000000003`, which the reindex replaces). Read whole when two broad dimensions are intersected (about 16 bytes an item, where a
     * posting costs about 80).
     */
    blockPartition,
    block: (accountId: string, dimension: string, number: number) => ({
      pk: blockPartition(accountId, dimension),
      sk: `${padId(Math.floor(number / (NUMBERS_PER_BLOCK * BLOCK_SPREAD)))}#${shardSort(number % BLOCK_SPREAD)}`,
    }),
    termsPartition,
    prefixTerm: (accountId: string, term: string, orderKey: string) => ({
      pk: termsPartition(accountId),
      sk: `p#${term}#${orderKey}`,
    }),
    prefixTermQuery: (term: string) => `p#${term}`,
    numberTerm: (accountId: string, number: string, orderKey: string) => ({
      pk: termsPartition(accountId),
      sk: `n#${number}#${orderKey}`,
    }),
    numberTermQuery: (number: string) => `n#${number}#`,
    /**
     * The account's directory of dimensions: an item per dimension whose posting or block partition the index
     * ever wrote (put before or with the first write there), so the reindex finds every index partition of
     * the account by Query, never by Scan. Dimension names start with a letter and sort after the progress item.
     */
    directoryPartition,
    directoryEntry: (accountId: string, dimension: string) => ({
      pk: directoryPartition(accountId),
      sk: dimension,
    }),
    /** The reindex's progress (phase and cursor) while one is under way: `tickets reindex` continues from it. */
    reindexProgress: (accountId: string) => ({ pk: directoryPartition(accountId), sk: '#REINDEX' }),
    /**
     * An entity's due entry (a ticket's soonest service-level due time still to watch), on the entity item itself
     * in the keys-only due index (gsi2): one of DUE_SHARDS partitions by a hash of account and order key, sorted by
     * the due time (epoch ms, 15 digits). The entity's Put writes, moves or drops it: it is derived from the
     * entity by its declaration (IndexDeclaration.due), in the same commit as every change.
     */
    due: (accountId: string, orderKey: string, dueMicros: number) => ({
      gsi2pk: `${entity}_DUE#${dueShardOf(accountId, orderKey)}`,
      gsi2sk: `${dueMs(dueMicros / 1000)}#${accountId}#${orderKey}`,
    }),
    duePartition: (shard: number) => `${entity}_DUE#${shard}`,
    dueIndex: 'gsi2' as IndexName,
    /** The due sort key bound of the entries due at or before `atMs` (gsi2sk < this). */
    dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
    /**
     * A sorted posting (IndexDeclaration.sorts): in one partition per sort and dimension (`all` and the bounded
     * ones), sorted by the entity's sort value, then newest first (the order key with every digit complemented).
     */
    sortedPartition: (accountId: string, sort: string, dimension: string) =>
      `${entity}_SORTED#${accountId}#${sort}#${dimension}`,
    sorted: (accountId: string, sort: string, dimension: string, value: string, orderKey: string) => ({
      pk: `${entity}_SORTED#${accountId}#${sort}#${dimension}`,
      sk: `${value}#${complementDigits(orderKey)}`,
    }),
    /** The order key a sorted posting's sort key names. */
    orderKeyOfSorted: (sk: string) => complementDigits(sk.slice(sk.length - orderKeys.length)),
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

/** A term item's sort key (`p#<term>#<order key>` or `n#<number>#<order key>`) read back. */
export function parseTermKey(sk: string): { term: string; orderKey: string } {
  return {
    term: sk.slice(2, sk.length - orderKeys.length - 1),
    orderKey: sk.slice(sk.length - orderKeys.length),
  };
}

export type IndexKeys = ReturnType<typeof indexKeys>;

/** Every digit d as 9 − d (an order key's digits complemented: ascending is then newest first); its own inverse. */
function complementDigits(key: string): string {
  return key.replace(/[0-9]/g, (d) => String(9 - Number(d)));
}

/** Tickets: the index engine's keys of the `TICKET` entity, as every ticket item has always been keyed. */
export const ticketKeys = indexKeys('TICKET');

/**
 * A ticket's conversation (docs/data-model.md, "Messages"): an item per message in the ticket's own partition,
 * sorted by the message's number in its ticket (10 digits), so a page is one range of one partition whatever the
 * conversation's length. Number 1 is the description, derived from the ticket and never stored.
 */
export const messageKeys = {
  partition: (accountId: string, ticketUuid: string) => `TICKET_MESSAGES#${accountId}#${ticketUuid}`,
  sort: (number: number) => String(number).padStart(10, '0'),
  message: (accountId: string, ticketUuid: string, number: number) => ({
    pk: messageKeys.partition(accountId, ticketUuid),
    sk: messageKeys.sort(number),
  }),
};

/**
 * The e-mail channel (docs/data-model.md, "E-mail"): who owns an address, which message a Message-ID became
 * (the dedupe and the threading lookup in one item), and the inbound log of every received mail.
 */
export const emailKeys = {
  /** An address (lower-cased) -> the one account it belongs to: its uniqueness and the recipient lookup. */
  address: (address: string) => ({ pk: `EMAIL_ADDRESS#${address.toLowerCase()}`, sk: 'EMAIL_ADDRESS' }),
  /** A Message-ID header of one account (by its SHA-256: any length fits) -> the ticket and message it is. */
  messageId: (accountId: string, idHash: string) => ({
    pk: `EMAIL_MESSAGE_ID#${accountId}#${idHash}`,
    sk: 'EMAIL_MESSAGE_ID',
  }),
  /** The account's inbound log: one item per received mail, sorted by its time-ordered id (newest last). */
  inboundPartition: (accountId: string) => `EMAIL_INBOUND#${accountId}`,
  inbound: (accountId: string, inboundId: string) => ({
    pk: `EMAIL_INBOUND#${accountId}`,
    sk: inboundId,
  }),
};

/**
 * The outbox (docs/email.md, "Sending"; docs/data-model.md, "E-mail"): mail the service sends. A reply's mail is
 * its message item itself; an acknowledgement has its own item. While a mail waits to be sent (queued, or a
 * retry's wait) its item is in the keys-only due index (gsi2), in one of DUE_SHARDS partitions by a hash of its
 * key, sorted by when it is due (epoch ms, 15 digits); sending it (or giving up) removes the entry.
 */
export const outboxKeys = {
  due: (accountId: string, key: { pk: string; sk: string }, atMs: number) => ({
    gsi2pk: `EMAIL_DUE#${dueShardOf(accountId, `${key.pk}#${key.sk}`)}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}`,
  }),
  duePartition: (shard: number) => `EMAIL_DUE#${shard}`,
  dueIndex: 'gsi2' as IndexName,
  dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  /** A due entry's sort key read back (the item's own keys come with the entry: the index projects them). */
  parseDue: (sk: string) => {
    const [due, accountId] = sk.split('#');
    return { dueMs: Number(due), accountId: accountId ?? '' };
  },
  /** A ticket's acknowledgement (at most one: its Put is conditional). */
  ack: (accountId: string, ticketUuid: string) => ({ pk: `EMAIL_ACK#${accountId}`, sk: ticketUuid }),
  /** Acknowledgements sent to one sender (by its SHA-256) in one hour (epoch hours): at most 10. */
  ackRate: (accountId: string, senderHash: string, hour: number) => ({
    pk: `EMAIL_ACK_RATE#${accountId}`,
    sk: `${senderHash}#${hour}`,
  }),
  /**
   * An address that bounced: it receives nothing more from the account until it writes in again. Keyed by the
   * address's keyed hash (lib/erasures/address-hash.ts), never the address: a bounce or complaint landing after the
   * address's erasure writes no address back.
   */
  suppressed: (accountId: string, addressHash: string) => ({
    pk: `EMAIL_SUPPRESSED#${accountId}`,
    sk: addressHash,
  }),
};

export const idempotencyKeys = {
  /** An Idempotency-Key of an account (by its SHA-256: any printable key fits) and its kept answer. */
  record: (accountId: string, keyHash: string) => ({
    pk: `IDEMPOTENCY#${accountId}#${keyHash}`,
    sk: 'IDEMPOTENCY',
  }),
};

/** How many partitions an account's feed is spread over (docs/data-model.md, "Events"; docs/capacity.md). */
export const EVENT_SHARDS = 16;
/**
 * The first place the shards' counters hand out: shard k's place n is EVENT_PLACE_BASE + n * 16 + k, in partition
 * k (n counts the shard's places: lib/data/events/lanes.ts; a multiple of 16, so a place's shard is place mod 16).
 * 10^13: every place has a 14-digit sort key (lexical order is place order): 5.6 * 10^12 places a shard.
 */
export const EVENT_PLACE_BASE = 10_000_000_000_000;

/**
 * The events feed: an item per place in the account's sequence (an event, or a void place whose commit did not
 * land), place `p` in the account's shard partition `p mod EVENT_SHARDS`, sorted by place; an event too large for
 * one item continues in parts (`<place>#1`). docs/data-model.md, "Events".
 */
export const eventKeys = {
  /** The `type` of an event item (here, the CDK stream filter reads it without the store's client) and a void. */
  itemType: { event: 'event', void: 'event_void' } as const,
  shardPartition: (accountId: string, shard: number) => `EVENTS#${accountId}#${shard}`,
  /** The partition a place's items are written in. */
  partitionOf: (accountId: string, seq: number) => eventKeys.shardPartition(accountId, seq % EVENT_SHARDS),
  /** Every partition of the account's feed: its shards'. */
  partitions: (accountId: string) =>
    Array.from({ length: EVENT_SHARDS }, (_, k) => eventKeys.shardPartition(accountId, k)),
  sort: (seq: number) => String(seq).padStart(14, '0'),
  place: (accountId: string, seq: number) => ({
    pk: eventKeys.partitionOf(accountId, seq),
    sk: eventKeys.sort(seq),
  }),
  part: (accountId: string, seq: number, part: number) => ({
    pk: eventKeys.partitionOf(accountId, seq),
    sk: `${eventKeys.sort(seq)}#${part}`,
  }),
  /**
   * Shard k's place counter: `n` its last place handed out (the n-th of the shard), `at` when (epoch ms), and the
   * last range a reader skipped it over (`bump_from`..`bump_to`, voided by one range item in the same transaction).
   */
  counter: (accountId: string, shard: number) => ({ pk: `EVENT_SEQ#${accountId}#${shard}`, sk: 'EVENT_SEQ' }),
  parse: (sk: string) => {
    const [seq, part] = sk.split('#');
    return { seq: Number(seq), part: part === undefined ? 0 : Number(part) };
  },
  /** The account of a feed partition key (`EVENTS#<acc>#<k>`), or undefined for any other key. */
  accountOf: (pk: string) => /^EVENTS#(.+)#\d+$/.exec(pk)?.[1],
};

/**
 * Webhook endpoints (docs/webhooks.md, "Items"): one partition per account holding its endpoints, sorted by id (a
 * time-ordered id, so the partition reads oldest first), and the item that counts them (at most MAX_ENDPOINTS).
 */
export const webhookKeys = {
  partition: (accountId: string) => `WEBHOOKS#${accountId}`,
  endpoint: (accountId: string, endpointId: string) => ({
    pk: `WEBHOOKS#${accountId}`,
    sk: `ENDPOINT#${endpointId}`,
  }),
  /** The sort key prefix of every endpoint of the partition (the count item sorts apart). */
  endpointPrefix: 'ENDPOINT#',
  count: (accountId: string) => ({ pk: `WEBHOOKS#${accountId}`, sk: 'COUNT' }),
};

/** Epoch ms, zero-padded to 15 digits, so that lexical order is time order (the due index, pending deliveries). */
const dueMs = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');

/**
 * The webhook dispatcher's items (docs/webhooks.md, "Items"): per (account, endpoint) a delivery per event, its
 * pending deliveries by due time, its attempts log by number; the due index (gsi2, keys only, DUE_SHARDS partitions): one
 * entry per endpoint with pending deliveries, on the endpoint item itself; the local stream reader's checkpoints.
 */
export const webhookDeliveryKeys = {
  /** A delivery of one event to one endpoint: its state, attempt count, next attempt, last answer. */
  delivery: (accountId: string, endpointId: string, eventId: string) => ({
    pk: `WEBHOOK_DELIVERY#${accountId}#${endpointId}`,
    sk: eventId,
  }),
  /** A pending delivery, sorted by when it is due: what an endpoint has due now is one Query. */
  pendingPartition: (accountId: string, endpointId: string) => `WEBHOOK_PENDING#${accountId}#${endpointId}`,
  pending: (accountId: string, endpointId: string, dueAt: number, eventId: string) => ({
    pk: `WEBHOOK_PENDING#${accountId}#${endpointId}`,
    sk: `${dueMs(dueAt)}#${eventId}`,
  }),
  /** The sort key bound of the pending deliveries due at or before `at` (sk < this). */
  pendingDueBefore: (at: number) => `${dueMs(at + 1)}#`,
  /** A pending item's sort key read back. */
  parsePending: (sk: string) => {
    const [due, eventId] = sk.split('#');
    return { dueAt: Number(due), eventId: eventId ?? '' };
  },
  /** An attempt, by its number in the endpoint's log (12 digits): newest first, a page is one range of numbers. */
  attemptsPartition: (accountId: string, endpointId: string) => `WEBHOOK_ATTEMPTS#${accountId}#${endpointId}`,
  attempt: (accountId: string, endpointId: string, number: number) => ({
    pk: `WEBHOOK_ATTEMPTS#${accountId}#${endpointId}`,
    sk: webhookDeliveryKeys.attemptSort(number),
  }),
  attemptSort: (number: number) => String(number).padStart(12, '0'),
  /** gsi2 (keys only) entry of an endpoint with pending deliveries: in its due partition, sorted by its earliest due. */
  due: (accountId: string, endpointId: string, dueAt: number) => ({
    gsi2pk: webhookDeliveryKeys.duePartitions[dueShardOf(accountId, endpointId)] as string,
    gsi2sk: `${dueMs(dueAt)}#${accountId}#${endpointId}`,
  }),
  /** The due partitions: one per shard (lib/data/due-shards.ts says why), sorted by the entries' due. */
  duePartitions: Array.from({ length: DUE_SHARDS }, (_, shard) => `WEBHOOK_DUE#${shard}`),
  dueIndex: 'gsi2' as IndexName,
  /** The due sort key bound of the endpoints due at or before `at` (gsi2sk < this). */
  dueBefore: (at: number) => `${dueMs(at + 1)}#`,
  /** A due entry's sort key read back. */
  parseDue: (gsi2sk: string) => {
    const [due, accountId, endpointId] = gsi2sk.split('#');
    return { dueAt: Number(due), accountId: accountId ?? '', endpointId: endpointId ?? '' };
  },
  /** The local stream reader's checkpoint of one shard (infra/local/webhooks.ts). */
  streamCheckpoint: (consumer: string, streamArn: string, shardId: string) => ({
    pk: `STREAM_CHECKPOINT#${consumer}#${streamArn}`,
    sk: shardId,
  }),
};

/**
 * The trash (decisions.md, "Deleting, restoring and erasing"): one item per deleted object in the account's trash
 * partition, keyed by the object's uuid (a restore reads it by key, strongly consistent), holding the object as it
 * was. gsi1 lists an account's trash per type, newest deletion first; gsi2 (keys only) is its purge due entry, in
 * one of DUE_SHARDS partitions, sorted by the purge time, which the purge runner reads (never a Scan).
 */
export const trashKeys = {
  partition: (accountId: string) => `TRASH#${accountId}`,
  item: (accountId: string, uuid: string) => ({ pk: `TRASH#${accountId}`, sk: uuid }),
  /** gsi1: the trash of one type, newest deletion first (deletion microseconds, 17 digits, then the uuid). */
  listed: (accountId: string, type: string, deletedMicros: number, uuid: string) => ({
    gsi1pk: `TRASH#${accountId}#${type}`,
    gsi1sk: `${String(deletedMicros).padStart(17, '0')}#${uuid}`,
  }),
  listPartition: (accountId: string, type: string) => `TRASH#${accountId}#${type}`,
  listIndex: 'gsi1' as IndexName,
  /** gsi2: the purge due entry (purge time in epoch ms, 15 digits; then account and uuid). */
  purgeDue: (accountId: string, uuid: string, purgeMicros: number) => ({
    gsi2pk: `PURGE_DUE#${dueShardOf(accountId, uuid)}`,
    gsi2sk: `${dueMs(purgeMicros / 1000)}#${accountId}#${uuid}`,
  }),
  purgeDuePartition: (shard: number) => `PURGE_DUE#${shard}`,
  purgeDueIndex: 'gsi2' as IndexName,
  purgeDueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parsePurgeDue: (sk: string) => {
    const [, accountId, uuid] = sk.split('#');
    return { accountId: accountId ?? '', uuid: uuid ?? '' };
  },
};

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
  /** The ledger: one partition of every completed erasure (a few a day at most), read whole by the replay. */
  ledgerPartition: 'ERASURE_LEDGER',
  ledger: (accountId: string, id: string) => ({ pk: 'ERASURE_LEDGER', sk: `${accountId}#${id}` }),
};
