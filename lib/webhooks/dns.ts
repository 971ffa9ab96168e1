import { Resolver } from 'node:dns/promises';
import { LruMap } from '#lib/lru.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * Resolving a receiver's name (docs/webhooks.md, "One attempt"): DNS queries over the network (c-ares, on the event
 * loop) rather than `dns.lookup`, which runs getaddrinfo on libuv's thread pool (4 threads by default, shared with
 * file and crypto work): with an endpoint's 48 attempts at once, and 128 in a runner, every attempt's lookup queued
 * on those 4. Answers are kept for their records' TTL (at most MAX_TTL_SECONDS) in a bounded cache, and a name being
 * resolved is resolved once for every attempt that asks meanwhile. What the URL policy makes of the addresses
 * (url-policy.ts: every one checked, whether cached or not) is unchanged.
 */

/** The queries this needs of a resolver: node's `dns.promises.Resolver` (tests give their own). */
export interface RecordResolver {
  resolve4(host: string, options: { ttl: true }): Promise<{ address: string; ttl: number }[]>;
  resolve6(host: string, options: { ttl: true }): Promise<{ address: string; ttl: number }[]>;
}

/** Names kept at once (the least recently used goes first), and the longest an answer is kept whatever its TTL. */
export const MAX_CACHED_NAMES = 1_000;
export const MAX_TTL_SECONDS = 300;

/** Answers that say the name has no record of that family (not a failure: the other family may have some). */
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

interface Entry {
  addresses: Promise<{ address: string; family: number }[]>;
  /** Epoch ms the answer is kept until (0 while it is being resolved). */
  until: number;
}

export class DnsCache {
  private readonly entries: LruMap<string, Entry>;

  constructor(
    private readonly resolver: RecordResolver,
    capacity = MAX_CACHED_NAMES,
  ) {
    this.entries = new LruMap(capacity);
  }

  /**
   * Every address of `host`, IPv4 first: from the cache while its TTL lasts, else asked (both families at once). A
   * name with no address answers []; a query that fails otherwise (a timeout, a server failure) rejects unless the
   * other family answered addresses (`families`), and a failure is not kept.
   */
  resolveAll(host: string): Promise<{ address: string; family: number }[]> {
    const key = host.toLowerCase();
    const found = this.entries.get(key);
    if (found && (found.until === 0 || found.until > nowMillis())) return found.addresses;
    const entry: Entry = { addresses: Promise.resolve([]), until: 0 };
    entry.addresses = this.ask(key, entry);
    this.entries.set(key, entry);
    const forget = () => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    };
    // Kept only while its TTL lasts: no address, a TTL of 0 and a failure are asked again next time.
    entry.addresses.then((addresses) => {
      if (addresses.length === 0 || entry.until <= nowMillis()) forget();
    }, forget);
    return entry.addresses;
  }

  private async ask(host: string, entry: Entry) {
    const [v4, v6] = await this.families(host);
    const records = [...v4.map((r) => ({ ...r, family: 4 })), ...v6.map((r) => ({ ...r, family: 6 }))];
    const ttl = Math.min(MAX_TTL_SECONDS, ...records.map((r) => r.ttl));
    entry.until = nowMillis() + Math.max(0, ttl) * 1000;
    return records.map(({ address, family }) => ({ address, family }));
  }

  /**
   * Both families' records. One family failing (a timeout, a server failure) while the other answered with addresses
   * gives those addresses, as getaddrinfo did: the attempt connects only to an address the policy checked, so a
   * missing family can hide no address it would reach; a receiver whose DNS fails AAAA is still delivered to.
   * Both failing, or one failing and the other answering none, rejects.
   */
  private async families(host: string) {
    const [v4, v6] = await Promise.allSettled([
      this.family(() => this.resolver.resolve4(host, { ttl: true })),
      this.family(() => this.resolver.resolve6(host, { ttl: true })),
    ]);
    const answered = [v4, v6].flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    const failed = [v4, v6].find((r) => r.status === 'rejected');
    if (failed && answered.length === 0) throw failed.reason;
    const records = (r: PromiseSettledResult<{ address: string; ttl: number }[]>) =>
      r.status === 'fulfilled' ? r.value : [];
    return [records(v4), records(v6)] as const;
  }

  private async family(query: () => Promise<{ address: string; ttl: number }[]>) {
    try {
      return await query();
    } catch (error) {
      if (NO_RECORDS.has((error as NodeJS.ErrnoException).code ?? '')) return [];
      throw error;
    }
  }
}

/** Each query's own limit and tries: the URL policy's RESOLVE_TIMEOUT_MS bounds the whole. */
const QUERY_TIMEOUT_MS = 1_000;
const QUERY_TRIES = 2;

/** The process's cache over the system's DNS servers (/etc/resolv.conf). */
export const systemDns = new DnsCache(new Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES }));
