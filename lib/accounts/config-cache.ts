import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { LruMap } from '#lib/lru.ts';
import { nowMillis } from '#lib/time.ts';
import type { AccountConfig } from './types.ts';

/**
 * Account configuration cached in the container, so a warm create reads no settings. An operator's change
 * (admin apply) is seen within CONFIG_CACHE_SECONDS (decisions: at most 60 s).
 */
export const CONFIG_CACHE_SECONDS = 30;

/**
 * How many accounts' configurations one container keeps (the least recently used forgotten first). A
 * configuration is at most ~200 KB (1,000 agents, 100 pipelines of 20 stages), most well under 10 KB; a container
 * busy with more accounts than this reads the evicted ones again (1 Query), which is what a cold cache costs.
 */
export const CONFIG_CACHE_MAX_ACCOUNTS = 500;

interface Entry {
  expiresAt: number;
  config: Promise<AccountConfig | undefined>;
}

const cache = new LruMap<string, Entry>(CONFIG_CACHE_MAX_ACCOUNTS);

export function getAccountConfig(accountId: string): Promise<AccountConfig | undefined> {
  const now = nowMillis();
  const hit = cache.get(accountId);
  if (hit && hit.expiresAt > now) return hit.config;
  const entry = { expiresAt: now + CONFIG_CACHE_SECONDS * 1000, config: loadAccountConfig(accountId) };
  cache.set(accountId, entry);
  // A failed load is forgotten, unless a newer load has taken its place since.
  entry.config.catch(() => {
    if (cache.get(accountId) === entry) cache.delete(accountId);
  });
  return entry.config;
}
