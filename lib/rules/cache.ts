import { activeRules, readRulesMeta } from '#lib/data/rules/rules.ts';
import { LruMap } from '#lib/lru.ts';
import { nowMillis } from '#lib/time.ts';
import type { Rule } from './types.ts';

/**
 * The account's active rules, cached in the container (decisions.md: "rules are read from a cache kept fresh
 * within 5 seconds"; docs/rules.md, "The rules cache"), so a change evaluates 1,000 rules at no round trip more
 * than with none. Loaded by one Query (the `META` item's rules version with the rules: lib/data/rules/rules.ts),
 * then served as it is for RULES_FRESH_SECONDS; after that, the next caller checks the rules version (one GetItem)
 * and keeps the rules while it has not moved, or reads them again. So a rule written (or deleted) applies to every
 * change that starts more than 5 seconds after its write answered, and to this container's at once (its writes
 * forget the entry). The rules are sorted by position (ties by id), the order the evaluator runs them in.
 */
export const RULES_FRESH_SECONDS = 5;

/** Accounts a container keeps the rules of (1,000 usual rules are ~1 MB; most accounts have few). */
export const RULES_CACHE_MAX_ACCOUNTS = 200;

interface Entry {
  /** When the version was last known current. */
  checkedAt: number;
  version: number;
  rules: readonly Rule[];
}

const cache = new LruMap<string, Promise<Entry>>(RULES_CACHE_MAX_ACCOUNTS);

async function load(accountId: string, at: number): Promise<Entry> {
  const { version, rules } = await activeRules(accountId);
  return { checkedAt: at, version, rules: [...rules].sort((a, b) => a.position - b.position || a.id - b.id) };
}

async function recheck(accountId: string, held: Entry, at: number): Promise<Entry> {
  const { version } = await readRulesMeta(accountId);
  return version === held.version ? { ...held, checkedAt: at } : load(accountId, at);
}

/** The account's active rules in order, at most RULES_FRESH_SECONDS behind the store. */
export async function getActiveRules(accountId: string): Promise<readonly Rule[]> {
  const at = nowMillis();
  const pending = cache.get(accountId);
  const held = pending && (await pending.catch(() => undefined));
  if (held && at - held.checkedAt <= RULES_FRESH_SECONDS * 1000) return held.rules;
  const next = held ? recheck(accountId, held, at) : load(accountId, at);
  cache.set(accountId, next);
  next.catch(() => {
    if (cache.get(accountId) === next) cache.delete(accountId);
  });
  return (await next).rules;
}

/** Forgets the account's rules (this container changed them: the next change reads them again). */
export function forgetActiveRules(accountId: string): void {
  cache.delete(accountId);
}
