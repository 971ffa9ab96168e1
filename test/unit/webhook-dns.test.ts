import { describe, expect, it } from 'vitest';
import { DnsCache, MAX_TTL_SECONDS, type RecordResolver } from '#lib/webhooks/dns.ts';
import { checkWebhookUrl, resolveSafeAddress, URL_MESSAGES } from '#lib/webhooks/url-policy.ts';
import { useManualClock } from '#test/support/clock.ts';

/**
 * Resolving receivers' names (lib/webhooks/dns.ts; docs/webhooks.md, "One attempt"): DNS queries (A and AAAA, with
 * their TTLs) instead of getaddrinfo on libuv's thread pool, kept for their TTL in a bounded cache; the URL policy
 * checks every address, cached or not, as before. No name is really resolved: each test gives the DNS answers, and
 * the TTLs run out on the manual clock.
 */
const clock = useManualClock();

type Records = { address: string; ttl: number }[];

/** A resolver answering from `table` (a family absent: no records of it), counting its queries. */
function fakeDns(table: Record<string, { v4?: Records; v6?: Records; fail?: string }>) {
  const asked: string[] = [];
  const answer = (family: 'v4' | 'v6') => async (host: string) => {
    asked.push(`${family} ${host}`);
    const entry = table[host];
    if (entry?.fail) throw Object.assign(new Error(`query ${entry.fail}`), { code: entry.fail });
    const records = entry?.[family];
    if (!records)
      throw Object.assign(new Error(`query ENODATA ${host}`), { code: entry ? 'ENODATA' : 'ENOTFOUND' });
    return records;
  };
  const resolver: RecordResolver = { resolve4: answer('v4'), resolve6: answer('v6') };
  return { resolver, asked, table };
}

describe('webhook DNS: resolved by query, kept for the TTL', () => {
  it('asks once for every attempt while the TTL lasts (concurrent ones too), IPv4 first, and again after it', async () => {
    const dns = fakeDns({
      'hooks.example.com': {
        v4: [{ address: '93.184.215.14', ttl: 60 }],
        v6: [{ address: '2606:4700:4700::1111', ttl: 30 }],
      },
    });
    const cache = new DnsCache(dns.resolver);
    const answers = await Promise.all(
      Array.from({ length: 48 }, () => cache.resolveAll('hooks.example.com')),
    );
    expect(answers[47]).toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
    expect(dns.asked).toEqual(['v4 hooks.example.com', 'v6 hooks.example.com']);
    // The shortest TTL of the answer (30 s) is the entry's.
    clock().jumpTo(clock().nowMs() + 29_000);
    await cache.resolveAll('HOOKS.example.com');
    expect(dns.asked).toHaveLength(2);
    clock().jumpTo(clock().nowMs() + 1_001);
    await cache.resolveAll('hooks.example.com');
    expect(dns.asked).toHaveLength(4);
  });

  it(`keeps an answer at most ${MAX_TTL_SECONDS} s whatever its TTL, and does not keep a TTL of 0`, async () => {
    const dns = fakeDns({
      'long.example.com': { v4: [{ address: '93.184.215.14', ttl: 86_400 }] },
      'zero.example.com': { v4: [{ address: '93.184.215.15', ttl: 0 }] },
    });
    const cache = new DnsCache(dns.resolver);
    await cache.resolveAll('long.example.com');
    await cache.resolveAll('zero.example.com');
    await cache.resolveAll('zero.example.com');
    expect(dns.asked.filter((q) => q.includes('zero'))).toHaveLength(4);
    clock().jumpTo(clock().nowMs() + MAX_TTL_SECONDS * 1000 + 1);
    await cache.resolveAll('long.example.com');
    expect(dns.asked.filter((q) => q.includes('long'))).toHaveLength(4);
  });

  it("keeps neither no address nor a failure; one family failing gives the other's addresses, with none a failure", async () => {
    const dns = fakeDns({
      'v4only.example.com': { v4: [{ address: '93.184.215.14', ttl: 60 }] },
      'broken.example.com': { fail: 'ESERVFAIL' },
    });
    const cache = new DnsCache(dns.resolver);
    expect(await cache.resolveAll('v4only.example.com')).toEqual([{ address: '93.184.215.14', family: 4 }]);
    expect(await cache.resolveAll('nowhere.example.com')).toEqual([]);
    expect(await cache.resolveAll('nowhere.example.com')).toEqual([]);
    expect(dns.asked.filter((q) => q.includes('nowhere'))).toHaveLength(4);
    await expect(cache.resolveAll('broken.example.com')).rejects.toThrow('ESERVFAIL');
    dns.table['broken.example.com'] = { v4: [{ address: '93.184.215.16', ttl: 60 }] };
    expect(await cache.resolveAll('broken.example.com')).toEqual([{ address: '93.184.215.16', family: 4 }]);
    // Only the AAAA query failing: the A records answer, as getaddrinfo gave them (the attempt connects only to an
    // address the policy checked); with no A record either, the failure is the answer.
    dns.table['half.example.com'] = { v4: [{ address: '93.184.215.17', ttl: 60 }] };
    const halfFailing: DnsCache = new DnsCache({
      resolve4: dns.resolver.resolve4,
      resolve6: async () => {
        throw Object.assign(new Error('query ETIMEOUT'), { code: 'ETIMEOUT' });
      },
    });
    expect(await halfFailing.resolveAll('half.example.com')).toEqual([
      { address: '93.184.215.17', family: 4 },
    ]);
    await expect(halfFailing.resolveAll('nowhere.example.com')).rejects.toThrow('ETIMEOUT');
  });

  it('holds at most its capacity of names, forgetting the least recently used', async () => {
    const records = (n: number) => ({ v4: [{ address: `93.184.215.${n}`, ttl: 60 }] });
    const dns = fakeDns({
      'a.example.com': records(1),
      'b.example.com': records(2),
      'c.example.com': records(3),
    });
    const cache = new DnsCache(dns.resolver, 2);
    for (const name of ['a', 'b', 'a', 'c', 'a', 'b']) await cache.resolveAll(`${name}.example.com`);
    // a kept (used last but one each time), b forgotten when c came: asked again.
    expect(dns.asked.filter((q) => q.startsWith('v4'))).toEqual([
      'v4 a.example.com',
      'v4 b.example.com',
      'v4 c.example.com',
      'v4 b.example.com',
    ]);
  });

  it('the URL policy checks every address of a cached answer as of a fresh one: an inside one refuses the name each time', async () => {
    const dns = fakeDns({
      'mixed.example.com': {
        v4: [{ address: '93.184.215.14', ttl: 60 }],
        v6: [{ address: 'fd00:ec2::254', ttl: 60 }],
      },
      'fine.example.com': { v4: [{ address: '93.184.215.14', ttl: 60 }] },
    });
    const cache = new DnsCache(dns.resolver);
    const resolve = (host: string) => cache.resolveAll(host);
    for (let i = 0; i < 3; i++) {
      await expect(resolveSafeAddress('mixed.example.com', { resolve })).rejects.toThrow(
        URL_MESSAGES.address,
      );
      expect(await resolveSafeAddress('fine.example.com', { resolve })).toEqual({
        address: '93.184.215.14',
        family: 4,
      });
    }
    expect(dns.asked).toHaveLength(4);
  });

  it('refuses localhost and the names under it as loopback without asking (RFC 6761: DNS does not read /etc/hosts)', async () => {
    const dns = fakeDns({});
    const resolve = (host: string) => new DnsCache(dns.resolver).resolveAll(host);
    for (const url of ['https://localhost/hook', 'https://hooks.localhost/x', 'https://LOCALHOST./y']) {
      expect(await checkWebhookUrl(url, { allowLocal: false, resolve }), url).toBe(URL_MESSAGES.address);
    }
    expect(dns.asked).toEqual([]);
  });
});
