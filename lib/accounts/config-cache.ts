import { AsyncLocalStorage } from 'node:async_hooks';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { readConfigVersion } from '#lib/data/accounts/config-version.ts';
import { requestRate } from '#lib/data/requests/rate-limit.ts';
import { LruMap } from '#lib/lru.ts';
import { nowMillis } from '#lib/time.ts';
import type { AccountConfig } from './types.ts';

/**
 * Account configuration cached in the container, so a warm create reads no settings. Two readings
 * (docs/decisions.md, "Settings seen at once"):
 * - getAccountConfig: current. A cached configuration serves only while it is at least as new as the account's
 *   configuration version (lib/data/accounts/config-version.ts), which an API request has from its rate count (no
 *   call more; the request's first reads run beside it) and anything else reads (one GetItem). So a change of
 *   agents or teams, through the API or `apply`, is seen by every request begun after it answered.
 * - getCachedAccountConfig: up to CONFIG_CACHE_SECONDS old, no wait: for what only `apply` changes and a request
 *   must not wait on (the ticket prefix of a reference, pipelines and stages, the account's addresses).
 * Either way an entry lives at most CONFIG_CACHE_SECONDS: the bound when a version move was lost to a crash.
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
  /** The configuration version known before the load began: the load holds every change up to it. */
  version: number;
  config: Promise<AccountConfig | undefined>;
}

const cache = new LruMap<string, Entry>(CONFIG_CACHE_MAX_ACCOUNTS);

/** The account's configuration as it is now: every change answered before this call began is in it. */
export async function getAccountConfig(accountId: string): Promise<AccountConfig | undefined> {
  const version = await currentVersion(accountId);
  const hit = live(accountId);
  if (hit && hit.version >= version) return hit.config;
  return load(accountId, version);
}

/** The account's configuration as cached: at most CONFIG_CACHE_SECONDS old (for settings only `apply` changes). */
export function getCachedAccountConfig(accountId: string): Promise<AccountConfig | undefined> {
  const hit = live(accountId);
  return hit ? hit.config : load(accountId, 0);
}

/** Forgets the account's cached configuration (after this container changed it: read again at once). */
export function forgetAccountConfig(accountId: string): void {
  cache.delete(accountId);
}

/**
 * The rules version an API request's rate count read back (no call more), or undefined outside a request: what the
 * rules cache keeps its entries by inside a request (lib/rules/cache.ts).
 */
export async function requestRulesVersion(): Promise<number | undefined> {
  const rate = requestRate();
  if (!rate) return undefined;
  const outcome = await rate.eager.catch(() => undefined);
  return outcome?.allowed ? outcome.rulesVersion : 0;
}

/** Each account's configuration version as a runner's pass read it first (withPassConfigVersions). */
const passVersions = new AsyncLocalStorage<Map<string, Promise<number>>>();

/**
 * Runs one pass of a runner (the due runner's: lib/tickets/breaches.ts) reading each account's configuration version
 * once, at the first getAccountConfig of that account, not once a ticket: the pass works with the configuration as
 * it stood then, as a request works with the configuration of its start, and the next pass (a second or so later)
 * sees every change answered before it began. A version read that fails is read again by the next caller.
 */
export function withPassConfigVersions<T>(work: () => Promise<T>): Promise<T> {
  return passVersions.run(new Map(), work);
}

/** The version an API request's rate count read back, or (outside one) the version as stored. */
async function currentVersion(accountId: string): Promise<number> {
  const rate = requestRate();
  if (!rate) {
    const held = passVersions.getStore();
    if (!held) return readConfigVersion(accountId);
    let version = held.get(accountId);
    if (!version) {
      version = readConfigVersion(accountId);
      held.set(accountId, version);
      version.catch(() => held.delete(accountId));
    }
    return version;
  }
  // The count is of the caller's account. A refused or failed count is the request's answer whatever it reads (429,
  // 503): what is cached will do.
  const outcome = await rate.eager.catch(() => undefined);
  return outcome?.allowed ? outcome.configVersion : 0;
}

function live(accountId: string): Entry | undefined {
  const hit = cache.get(accountId);
  return hit && hit.expiresAt > nowMillis() ? hit : undefined;
}

function load(accountId: string, version: number): Promise<AccountConfig | undefined> {
  const entry = {
    expiresAt: nowMillis() + CONFIG_CACHE_SECONDS * 1000,
    version,
    config: loadAccountConfig(accountId),
  };
  // A slower load of an older version never replaces a newer one.
  const held = live(accountId);
  if (!held || held.version <= version) cache.set(accountId, entry);
  // A failed load is forgotten, unless a newer load has taken its place since.
  entry.config.catch(() => {
    if (cache.get(accountId) === entry) cache.delete(accountId);
  });
  return entry.config;
}
