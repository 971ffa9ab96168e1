import { requestRulesVersion } from '#lib/accounts/config-cache.ts';
import { moveRulesVersion } from '#lib/data/accounts/config-version.ts';
import { activeRules, readRulesMeta } from '#lib/data/rules/rules.ts';
import { logError } from '#lib/log.ts';
import { LruMap } from '#lib/lru.ts';
import { nowMillis } from '#lib/time.ts';
import type { Rule } from './types.ts';

/**
 * The account's active rules, cached in the container (decisions.md: "rules are read from a cache kept fresh
 * within 5 seconds"; docs/rules.md, "The rules cache"), so a change evaluates 1,000 rules at no round trip more
 * than with none. Loaded by one Query (the `META` item's rules version with the rules: lib/data/rules/rules.ts).
 * Kept fresh two ways, neither of which costs a call a request would not make anyway:
 * - **Inside an API request** by the account's rules version, which the request's rate count reads back beside the
 *   configuration's (lib/accounts/config-cache.ts, requestRulesVersion): every rule write moves it once its commit landed
 *   (rulesChanged), so a request begun after a rule write answered reads the rules again, in every container, at
 *   once. An entry serves at most RULES_CACHE_SECONDS: the bound when a version move was lost to a crash, as the
 *   configuration's own. No call depends on the time a request runs at, so two requests alike make the same calls.
 * - **Outside a request** (the due runner's time changes, the mail worker), where no rate count ran: served as it is
 *   for RULES_FRESH_SECONDS, then the next caller checks the rules version (one GetItem of META) and keeps the
 *   rules while it has not moved, or reads them again.
 * The rules are sorted by position (ties by id), the order the evaluator runs them in.
 */
export const RULES_FRESH_SECONDS = 5;

/** The longest an entry serves inside a request without its version moving (a lost move's bound). */
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
    if (held && held.known >= known && at - held.loadedAt <= RULES_CACHE_SECONDS * 1000) {
      return held.rules;
    }
    next = load(accountId, at, known);
  } else {
    if (held && at - held.checkedAt <= RULES_FRESH_SECONDS * 1000) return held.rules;
    next = held ? recheck(accountId, held, at) : load(accountId, at, 0);
  }
  cache.set(accountId, next);
  next.catch(() => {
    if (cache.get(accountId) === next) cache.delete(accountId);
  });
  return (await next).rules;
}

/**
 * After a rule write committed: this container forgets the account's rules, and the rules version moves,
 * so every request begun after the write answered reads them again (a failed move leaves it to
 * RULES_CACHE_SECONDS, as for the configuration).
 */
export async function rulesChanged(accountId: string): Promise<void> {
  cache.delete(accountId);
  await moveRulesVersion(accountId).catch(logError);
}
