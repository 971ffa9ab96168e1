import { BlockList, isIP } from 'node:net';
import { withTimeout } from '#lib/time.ts';
import { systemDns } from './dns.ts';

/**
 * Where webhooks may go (decisions.md, "Webhooks"): `https://` only, to a host that is, and resolves only to,
 * public addresses; never this machine, its network, the cloud's metadata service or an address that wraps one
 * of these (IPv4-mapped IPv6, NAT64, 6to4, Teredo). Checked at registration and again before every delivery; a
 * delivery connects to the address checked (resolveWebhookTarget), so a name whose DNS answer changes between
 * the check and the connection (DNS rebinding) cannot reach inside.
 *
 * Odd spellings of an IPv4 address (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`) are not a way around it: the
 * WHATWG URL parser writes every one of them as the dotted address it means, and that is what is checked.
 */

/** Resolves a host name to all its addresses (the system's DNS servers by default, dns.ts; tests give their own). */
export type ResolveAll = (host: string) => Promise<{ address: string; family: number }[]>;

export interface UrlPolicyOptions {
  /** The local stage (lib/config/stage.ts): also `http://127.0.0.1:<port>` and `http://localhost:<port>`. */
  allowLocal: boolean;
  resolve?: ResolveAll | undefined;
}

/** Where a delivery connects: the URL as checked, and the one address it may reach it at. */
export interface WebhookTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/** A host refused by the policy, or one that does not resolve: the message says which, naming the url field. */
export class RefusedWebhookHost extends Error {}

export const MAX_URL_LENGTH = 2048;
/** A registration or a delivery waits at most this long for the host's addresses. */
export const RESOLVE_TIMEOUT_MS = 3000;

export const URL_MESSAGES = {
  invalid: 'The url field must be a valid URL.',
  https: 'The url field must be an https URL.',
  httpsOrLocal:
    'The url field must be an https URL (or http://127.0.0.1:<port> or http://localhost:<port> on the local stage).',
  credentials: 'The url field must not contain a user name or password.',
  address: 'The url field must not point to a loopback, private, link-local or metadata address.',
  unresolved: "The url field's host does not resolve.",
} as const;

/** IPv4 blocks that are not the public internet (IANA's special-purpose registry); their IPv4-mapped forms too. */
const BLOCKED_IPV4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 (unspecified) included
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, 169.254.169.254 (cloud metadata) included
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relays
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, 255.255.255.255 included
];

/**
 * IPv6: only global unicast (2000::/3) passes, which leaves out the unspecified and loopback addresses, every
 * IPv4-mapped (::ffff:0:0/96) and IPv4-compatible (::/96) form, NAT64 (64:ff9b::/96), unique local (fc00::/7,
 * the EC2 metadata service fd00:ec2::254 included), link-local (fe80::/10) and multicast; and within it, these.
 */
const GLOBAL_UNICAST_IPV6: readonly [string, number] = ['2000::', 3];
const BLOCKED_IPV6: readonly (readonly [string, number])[] = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64: an IPv4 address inside
  ['64:ff9b:1::', 48], // local-use NAT64
  ['fc00::', 7], // unique local, fd00:ec2::254 included
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['2001::', 32], // Teredo: an IPv4 address inside
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: an IPv4 address inside
];

const blocked = new BlockList();
for (const [network, prefix] of BLOCKED_IPV4) blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of BLOCKED_IPV6) blocked.addSubnet(network, prefix, 'ipv6');
const globalUnicast = new BlockList();
globalUnicast.addSubnet(GLOBAL_UNICAST_IPV6[0], GLOBAL_UNICAST_IPV6[1], 'ipv6');

/** Whether a delivery may connect to this IP address (a literal: no name is resolved here). */
export function isAllowedAddress(address: string): boolean {
  const bare = address.replace(/%.*$/, ''); // a zone (fe80::1%eth0) names an interface, not another address
  switch (isIP(bare)) {
    case 4:
      return !blocked.check(bare, 'ipv4');
    case 6:
      return globalUnicast.check(bare, 'ipv6') && !blocked.check(bare, 'ipv6');
    default:
      return false;
  }
}

const systemResolve: ResolveAll = (host) => systemDns.resolveAll(host);

/**
 * `localhost` and the names under it are this machine (RFC 6761), whatever DNS says: getaddrinfo answered them from
 * /etc/hosts, which the DNS resolver (dns.ts) does not read, so they are refused here as the loopback they are.
 */
const isLocalhostName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

/**
 * One address of `host` a delivery may connect to: the host itself when it is an IP address, else the first of
 * its addresses, provided every one of them is allowed (a name with one inside address among public ones is
 * refused, not filtered: it is not a public receiver). Throws RefusedWebhookHost.
 */
export async function resolveSafeAddress(
  host: string,
  options: { resolve?: ResolveAll | undefined } = {},
): Promise<{ address: string; family: 4 | 6 }> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const literal = isIP(bare);
  if (literal !== 0) {
    if (!isAllowedAddress(bare)) throw new RefusedWebhookHost(URL_MESSAGES.address);
    return { address: bare, family: literal as 4 | 6 };
  }
  if (isLocalhostName(bare)) throw new RefusedWebhookHost(URL_MESSAGES.address);
  let addresses: { address: string; family: number }[];
  try {
    addresses = await withTimeout(
      (options.resolve ?? systemResolve)(bare),
      RESOLVE_TIMEOUT_MS,
      () => new Error(`no answer within ${RESOLVE_TIMEOUT_MS} ms`),
    );
  } catch {
    throw new RefusedWebhookHost(URL_MESSAGES.unresolved);
  }
  const [first] = addresses;
  if (!first) throw new RefusedWebhookHost(URL_MESSAGES.unresolved);
  if (!addresses.every((a) => isAllowedAddress(a.address))) {
    throw new RefusedWebhookHost(URL_MESSAGES.address);
  }
  return { address: first.address, family: isIP(first.address) === 6 ? 6 : 4 };
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost']);

/**
 * The URL checked against the policy, with the address to connect to; or the message that refuses it (naming
 * the url field). On the local stage, `http://127.0.0.1[:port]` and `http://localhost[:port]` pass as they
 * are and connect to 127.0.0.1; every other local form (https://localhost, http://[::1]) is refused there too.
 */
export async function resolveWebhookTarget(
  raw: string,
  options: UrlPolicyOptions,
): Promise<WebhookTarget | { refused: string }> {
  if (raw.length > MAX_URL_LENGTH) return { refused: URL_MESSAGES.invalid };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { refused: URL_MESSAGES.invalid };
  }
  if (url.username !== '' || url.password !== '') return { refused: URL_MESSAGES.credentials };
  if (options.allowLocal && url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname)) {
    return { url, address: '127.0.0.1', family: 4 };
  }
  if (url.protocol !== 'https:') {
    return { refused: options.allowLocal ? URL_MESSAGES.httpsOrLocal : URL_MESSAGES.https };
  }
  try {
    return { url, ...(await resolveSafeAddress(url.hostname, options)) };
  } catch (error) {
    if (error instanceof RefusedWebhookHost) return { refused: error.message };
    throw error;
  }
}

/** 'ok', or the message that refuses the URL (naming the url field). */
export async function checkWebhookUrl(raw: string, options: UrlPolicyOptions): Promise<'ok' | string> {
  const target = await resolveWebhookTarget(raw, options);
  return 'refused' in target ? target.refused : 'ok';
}
