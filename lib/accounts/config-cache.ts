import { loadAccountConfig } from '#lib/data/accounts.ts';
import type { AccountConfig } from './types.ts';

/**
 * Account configuration cached in the container, so a warm create reads no settings. An operator's change
 * (admin apply) is seen within CONFIG_CACHE_SECONDS (decisions: at most 60 s).
 */
export const CONFIG_CACHE_SECONDS = 30;

const cache = new Map<string, { expiresAt: number; config: Promise<AccountConfig | undefined> }>();

export function getAccountConfig(accountId: string): Promise<AccountConfig | undefined> {
  const now = Date.now();
  const hit = cache.get(accountId);
  if (hit && hit.expiresAt > now) return hit.config;
  const config = loadAccountConfig(accountId);
  cache.set(accountId, { expiresAt: now + CONFIG_CACHE_SECONDS * 1000, config });
  config.catch(() => cache.delete(accountId));
  return config;
}
