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

export const apiKeyKeys = {
  /** What the authorizer reads: the SHA-256 of the secret → account. The secret itself is never stored. */
  lookup: (hash: string) => ({ pk: `API_KEY#${hash}`, sk: 'API_KEY' }),
  /** An account's keys, listed by the admin CLI. */
  accountPartition: (accountId: string) => `API_KEYS#${accountId}`,
  record: (accountId: string, keyId: string) => ({ pk: `API_KEYS#${accountId}`, sk: `API_KEY#${keyId}` }),
  /** gsi1: a key record found by its id alone (`keys revoke KEY_ID`). */
  byId: (keyId: string) => ({ gsi1pk: `API_KEY_ID#${keyId}`, gsi1sk: 'API_KEY' }),
  byIdIndex: 'gsi1' as IndexName,
};

export const contactKeys = {
  /** One item per (account, e-mail lower-cased): the uniqueness constraint and the lookup in one. */
  byEmail: (accountId: string, email: string) => ({
    pk: `CONTACT#${accountId}#${email.toLowerCase()}`,
    sk: 'CONTACT',
  }),
};

/**
 * Ticket numbers per block: a dense block holds at most 50 packed keys (about 0.9 KB with its keys, so adding
 * one costs 1 write unit, as a posting's put does).
 */
export const TICKETS_PER_BLOCK = 50;

/**
 * Tickets. A ticket's sort key is its order key: creation time in epoch microseconds then its number, both
 * zero-padded, so a descending Query is newest first with the reference breaking ties.
 * Every list dimension (all, status, priority, assignee, requester e-mail, custom field value) has a
 * posting partition of small items keyed by order key, and a counter; every one but `all` also has blocks.
 * See docs/data-model.md.
 */
export const ticketKeys = {
  orderKey: (createdMicros: number, number: number) =>
    `${String(createdMicros).padStart(17, '0')}#${String(number).padStart(10, '0')}`,
  /** The creation microseconds and number an order key holds. */
  orderKeyParts: (orderKey: string) => {
    const [micros, number] = orderKey.split('#');
    return { createdMicros: Number(micros), number: Number(number) };
  },
  orderKeyLength: 28,
  ticketPartition: (accountId: string) => `TICKETS#${accountId}`,
  ticket: (accountId: string, orderKey: string) => ({ pk: `TICKETS#${accountId}`, sk: orderKey }),
  /** Counters of the bounded dimensions, and open work per agent (least-busy). */
  stats: (accountId: string) => ({ pk: `TICKET_STATS#${accountId}`, sk: 'STATS' }),
  postingPartition: (accountId: string, dimension: string) => `TICKET_INDEX#${accountId}#${dimension}`,
  posting: (accountId: string, dimension: string, orderKey: string) => ({
    pk: `TICKET_INDEX#${accountId}#${dimension}`,
    sk: orderKey,
  }),
  /** Counter of an unbounded dimension (e-mail, custom field value), in its posting partition. */
  counter: (accountId: string, dimension: string) => ({
    pk: `TICKET_INDEX#${accountId}#${dimension}`,
    sk: '#COUNT',
  }),
  /**
   * A dimension's packed block: the packed order keys (a string set) of its tickets numbered in one range of
   * TICKETS_PER_BLOCK. Read whole when two broad dimensions are intersected (about 16 bytes a ticket, where a
   * posting item costs about 80).
   */
  blockPartition: (accountId: string, dimension: string) => `TICKET_BLOCKS#${accountId}#${dimension}`,
  block: (accountId: string, dimension: string, number: number) => ({
    pk: ticketKeys.blockPartition(accountId, dimension),
    sk: padId(Math.floor(number / TICKETS_PER_BLOCK)),
  }),
  /** Lowest possible order key: postings sort above the `#COUNT` item. */
  firstOrderKey: '0',
  termsPartition: (accountId: string) => `TICKET_TERMS#${accountId}`,
  prefixTerm: (accountId: string, term: string, orderKey: string) => ({
    pk: `TICKET_TERMS#${accountId}`,
    sk: `p#${term}#${orderKey}`,
  }),
  prefixTermQuery: (term: string) => `p#${term}`,
  numberTerm: (accountId: string, number: string, orderKey: string) => ({
    pk: `TICKET_TERMS#${accountId}`,
    sk: `n#${number}#${orderKey}`,
  }),
  numberTermQuery: (number: string) => `n#${number}#`,
};

export const idempotencyKeys = {
  /** An Idempotency-Key of an account (by its SHA-256: any printable key fits) and its kept answer. */
  record: (accountId: string, keyHash: string) => ({
    pk: `IDEMPOTENCY#${accountId}#${keyHash}`,
    sk: 'IDEMPOTENCY',
  }),
};

export const dealKeys = {
  /** A deal, found by its uuid. */
  deal: (accountId: string, uuid: string) => ({ pk: `DEAL#${accountId}#${uuid}`, sk: 'DEAL' }),
};
