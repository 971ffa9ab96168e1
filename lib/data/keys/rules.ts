import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs, padId } from './sort.ts';

/**
 * Business rules and macros (docs/rules.md, "The store"): one partition per account. Its `META` item holds the
 * account's rules version (moved by every rule write, so the rules cache knows when to read again), its count of
 * active rules (at most 1,000) and the highest position given (a new rule goes last). Rules by id after it
 * (`RULE#`), macros by id before it (`MACRO#` < `META` < `RULE#`): the rules cache's one Query reads `META` and
 * the rules together, the version first.
 */
const partition = (accountId: string) => `RULES#${accountId}`;
const RULE = 'RULE#';
const MACRO = 'MACRO#';

export const ruleKeys = {
  partition,
  meta: (accountId: string) => ({ pk: partition(accountId), sk: 'META' }),
  rule: (accountId: string, id: number) => ({ pk: partition(accountId), sk: `${RULE}${padId(id)}` }),
  macro: (accountId: string, id: number) => ({ pk: partition(accountId), sk: `${MACRO}${padId(id)}` }),
  /** The sort key range of the rules (with `META` before them: `withMeta`). */
  rules: (withMeta = false) => ({ from: withMeta ? 'META' : RULE, to: `${RULE}~` }),
  /** The sort key range of the macros with an id above `after`. */
  macrosAbove: (after: number) => ({ from: `${MACRO}${padId(after + 1)}`, to: `${MACRO}~` }),
};

/** Epoch µs, zero-padded to 16 digits, so that lexical order is time order. */
const padUs = (us: number) => String(Math.max(0, Math.floor(us))).padStart(16, '0');

/**
 * A rule's firings (docs/rules.md, "`fired`"): a partition per rule, an item per firing, its sort key the firing's
 * time, then the ticket, the rule's place among the change's fired rules and a nonce (two changes of one ticket at
 * one microsecond, a manual clock's or two hosts', never share a key). Items only: no counter, so the many changes a
 * second that fire one rule take no item together. Kept 8 days (TTL), read over the last 7.
 */
const firedPartition = (accountId: string, ruleId: number) => `RULE_FIRED#${accountId}#${padId(ruleId)}`;

export const firingKeys = {
  partition: firedPartition,
  firing: (
    accountId: string,
    ruleId: number,
    at: { us: number; ticketUuid: string; place: number; nonce: string },
  ) => ({
    pk: firedPartition(accountId, ruleId),
    sk: `${padUs(at.us)}#${at.ticketUuid}#${String(at.place).padStart(2, '0')}#${at.nonce}`,
  }),
  /** The sort key range of the firings at `fromUs` to `toUs`, both included. */
  between: (fromUs: number, toUs: number) => ({ from: padUs(fromUs), to: `${padUs(toUs)}#~` }),
  /** A firing's time (epoch µs) from its sort key. */
  timeOf: (sk: string) => Number(sk.slice(0, 16)),
};

/**
 * An account's moment sweep (docs/rules.md, "Moments of tickets already there"): one root item per account at most,
 * written by a rule write that touches an active time rule (a newer one replaces it), and once split, its lanes: at
 * most RULE_SWEEP_SLOTS, each in a slot of its own (its own partition: the lanes' steps write their items side by
 * side, so no partition holds all of them). Each has its due entry in gsi2 (keys only, one of DUE_SHARDS partitions,
 * sorted by when it is next due, the lane's slot after the account), which the runner reads, never a Scan.
 */
const SWEEP_PARTITION = 'RULE_SWEEP#';

/** A sweep's lanes at most: 8 for each of the 4 not-closed statuses (lib/rules/sweep-split.ts). */
export const RULE_SWEEP_SLOTS = 32;

const sweepDue = (accountId: string, atMs: number, slot?: number) => ({
  gsi2pk: `RULE_SWEEP_DUE#${dueShardOf(accountId, 'SWEEP')}`,
  gsi2sk: slot === undefined ? `${dueMs(atMs)}#${accountId}` : `${dueMs(atMs)}#${accountId}#${slot}`,
});

export const ruleSweepKeys = {
  sweep: (accountId: string) => ({ pk: `${SWEEP_PARTITION}${accountId}`, sk: 'SWEEP' }),
  due: (accountId: string, atMs: number) => sweepDue(accountId, atMs),
  /** A lane of the sweep, by its slot (0 to RULE_SWEEP_SLOTS - 1). */
  lane: (accountId: string, slot: number) => ({ pk: `${SWEEP_PARTITION}${accountId}#${slot}`, sk: 'LANE' }),
  laneDue: (accountId: string, slot: number, atMs: number) => sweepDue(accountId, atMs, slot),
  duePartition: (shard: number) => `RULE_SWEEP_DUE#${shard}`,
  dueIndex: 'gsi2' as IndexName,
  dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  /** The account, and the lane's slot (none: the root, not split yet). */
  parseDue: (sk: string) => {
    const [, accountId = '', slot] = sk.split('#');
    return { accountId, slot: slot === undefined ? undefined : Number(slot) };
  },
};
