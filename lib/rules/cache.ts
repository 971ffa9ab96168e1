import { requestRulesVersion } from '#lib/accounts/config-cache.ts';
import { activeRules, readRulesMeta } from '#lib/data/rules/rules.ts';
import { LruMap } from '#lib/lru.ts';
import { nowMillis } from '#lib/time.ts';
import type { Rule } from './types.ts';

/**
 * The account's active rules, cached in the container (decisions.md: "rules are read from a cache kept fresh
 * within 5 seconds"; docs/rules.md, "The rules cache"), so a change evaluates 1,000 rules at no round trip more
 * than with none. Loaded by one Query (the `META` item's rules version with the rules: lib/data/rules/rules.ts).
 * Kept fresh two ways, neither of which costs a call a request would not make anyway:
 * - **Inside an API request** by the account's rules version, which the request's rate count reads back beside the
 *   configuration's (lib/accounts/config-cache.ts, requestRulesVersion). It is `META`'s own version, raised to the
 *   version a rule write will commit before the commit is sent (lib/data/accounts/config-version.ts), so a request
 *   begun after a rule write answered knows a version the old rules are not at, in every container, at once, and no
 *   crash after the commit can hide the write. An entry at that version (or later) serves up to RULES_CACHE_SECONDS.
 *   An entry behind it was loaded between a write's raise and its commit (or after a raise whose commit failed): it
 *   serves RULES_FRESH_SECONDS at most, then is read again. No call depends on the time a request runs at beyond
 *   that bound, so two requests alike make the same calls.
 * - **Outside a request** (the due runner's time changes, the mail worker), where no rate count ran: served as it is
 *   for RULES_FRESH_SECONDS, then the next caller checks the rules version (one GetItem of META) and keeps the
 *   rules while it has not moved, or reads them again; callers meanwhile wait for that check (a pass's tickets at
 *   once make one).
 * The rules are sorted by position (ties by id), the order the evaluator runs them in.
 */
export const RULES_FRESH_SECONDS = 5;

/** The longest an entry serves inside a request without its version moving. */
export const RULES_CACHE_SECONDS = 30;

/** Accounts a container keeps the rules of (1,000 usual rules are ~1 MB; most accounts have few). */
export const RULES_CACHE_MAX_ACCOUNTS = 200;

interface Entry {
  /** When the rules version was last known current (outside a request), and when the rules were loaded. */
  checkedAt: number;
  loadedAt: number;
  version: number;
  /** The rules version (the rate item's) known before the load began: the load holds every rule write up to it. */
  known: number;
  rules: readonly Rule[];
}

const cache = new LruMap<string, Promise<Entry>>(RULES_CACHE_MAX_ACCOUNTS);

async function load(accountId: string, at: number, known: number): Promise<Entry> {
  const { version, rules } = await activeRules(accountId);
  const sorted = [...rules].sort((a, b) => a.position - b.position || a.id - b.id);
  return { checkedAt: at, loadedAt: at, version, known, rules: sorted };
}

async function recheck(accountId: string, held: Entry, at: number): Promise<Entry> {
  const { version } = await readRulesMeta(accountId);
  return version === held.version ? { ...held, checkedAt: at } : load(accountId, at, held.known);
}

/** The account's active rules in order: as new as the request's rules version, or RULES_FRESH_SECONDS. */
export async function getActiveRules(accountId: string): Promise<readonly Rule[]> {
  const known = await requestRulesVersion();
  const at = nowMillis();
  const pending = cache.get(accountId);
  const held = pending && (await pending.catch(() => undefined));
  let next: Promise<Entry>;
  if (known !== undefined) {
    if (held && servesRequest(held, known, at - held.loadedAt)) return held.rules;
    next = load(accountId, at, known);
  } else {
    if (held && at - held.checkedAt <= RULES_FRESH_SECONDS * 1000) return held.rules;
    // Another caller's check or load began while this one waited (a runner's pass, many tickets at once): its answer.
    const newer = cache.get(accountId);
    if (newer && newer !== pending) return (await newer).rules;
    next = held ? recheck(accountId, held, at) : load(accountId, at, 0);
  }
  cache.set(accountId, next);
  next.catch(() => {
    if (cache.get(accountId) === next) cache.delete(accountId);
  });
  return (await next).rules;
}

/**
 * Whether an entry serves a request that knows rules version `known`: it holds that version (its rules are at it or
 * later), or it was loaded knowing it (between a write's raise and its commit) no more than RULES_FRESH_SECONDS ago.
 */
function servesRequest(held: Entry, known: number, ageMs: number): boolean {
  if (ageMs > RULES_CACHE_SECONDS * 1000) return false;
  return held.version >= known || (held.known >= known && ageMs <= RULES_FRESH_SECONDS * 1000);
}

/**
 * After a rule write committed: this container forgets the account's rules (the others know from the rules version
 * the write raised before its commit).
 */
export function rulesChanged(accountId: string): void {
  cache.delete(accountId);
}
