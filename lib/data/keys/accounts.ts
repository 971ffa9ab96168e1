import { keyedValue } from '../index/keyed.ts';
import { padId } from './sort.ts';

/** Key builders of an account: the account and its configuration, its counters, its contacts' addresses. */

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
  /**
   * The account's request count of the current minute (lib/data/requests/rate-limit.ts): written by every request.
   * It also holds the configuration's version (lib/data/accounts/config-version.ts), which every count returns.
   */
  rate: (accountId: string) => ({ pk: `RATE#${accountId}`, sk: 'RATE' }),
  /** A round-robin cursor: one small item per candidate set, named by a digest of the set (lib/data/tickets/sequences.ts). */
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

/**
 * The uniqueness of an agent's e-mail and of a team's name in the account (decisions.md, "People"), compared
 * lower-cased: one small item each (`{id}`), taken in the transaction that creates or renames, released in the one
 * that renames or deletes. Named by the account's keyed hash (lib/data/index/keyed.ts), as a contact's e-mail is:
 * no key holds the text. Outside the config partition, so the configuration's Query does not read them.
 */
export const peopleKeys = {
  agentEmail: (accountId: string, email: string) => ({
    pk: `AGENT_EMAIL#${accountId}#${keyedValue(accountId, email.toLowerCase())}`,
    sk: 'AGENT_EMAIL',
  }),
  teamName: (accountId: string, name: string) => ({
    pk: `TEAM_NAME#${accountId}#${keyedValue(accountId, `team:${name.toLowerCase()}`)}`,
    sk: 'TEAM_NAME',
  }),
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
