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
};

export const contactKeys = {
  /** One item per (account, e-mail lower-cased): the uniqueness constraint and the lookup in one. */
  byEmail: (accountId: string, email: string) => ({
    pk: `CONTACT#${accountId}#${email.toLowerCase()}`,
    sk: 'CONTACT',
  }),
};
