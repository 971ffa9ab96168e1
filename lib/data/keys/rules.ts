import { padId } from './sort.ts';

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
