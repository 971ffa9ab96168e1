import { domainToASCII } from 'node:url';

/**
 * Addresses as the service reads, keeps and compares them (docs/email.md, "Addresses"): one reader for received
 * mail, the API's address fields, the account file and the erasure, so whoever can write in can be erased.
 * Compared case-insensitively, an internationalized domain in its ASCII form (`ü.example` is `xn--tda.example`,
 * Node's url.domainToASCII), `local+token@domain` as `local@domain` where the account's own addresses are
 * concerned.
 */

/** The longest address held (RFC 5321's path less its brackets); a longer one is refused, never cut. */
export const MAX_ADDRESS_LENGTH = 254;

export type AddressProblem = 'too_long' | 'invalid';

// RFC 5322's atext, and any character past ASCII (RFC 6531: UTF-8 local parts).
const ATOM = "[A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~\\u0080-\\u{10FFFF}]+";
const DOT_ATOM = new RegExp(`^${ATOM}(?:\\.${ATOM})*$`, 'u');
// A quoted local part: printable ASCII but `"` and `\`, any character past ASCII, or a backslash pair.
const QUOTED = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e\u0080-\u{10FFFF}]|\\[\x20-\x7e])*"$/u;
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const DOMAIN_LITERAL = /^\[(?:[0-9.]{7,15}|ipv6:[0-9a-f:.]{2,45})\]$/;

/**
 * The address as it is held: the local part in its one form (localPart), the domain as written when it is ASCII
 * and in its ASCII form when it is not; or why it is not one. Never shortened: too long is a problem, not a cut.
 */
export function readAddress(input: string): { address: string } | { problem: AddressProblem } {
  const text = input.trim();
  // Nothing longer than this can come down to 254 characters (a quoted part loses two, a domain only grows).
  if (text.length > 4 * MAX_ADDRESS_LENGTH) return { problem: 'too_long' };
  const at = text.lastIndexOf('@');
  if (at < 1) return { problem: 'invalid' };
  const local = localPart(text.slice(0, at));
  const domain = asciiDomain(text.slice(at + 1));
  if (local === undefined || domain === undefined) return { problem: 'invalid' };
  const address = `${local}@${domain}`;
  return address.length > MAX_ADDRESS_LENGTH ? { problem: 'too_long' } : { address };
}

/** The form addresses are compared and hashed in (lower case, ASCII domain); undefined when not an address. */
export function canonicalAddress(input: string): string | undefined {
  const read = readAddress(input);
  return 'address' in read ? read.address.toLowerCase() : undefined;
}

/**
 * A local part in its one form: a quoted one with only the quoted-pairs it needs (`"john\\ doe"` is `"john doe"`,
 * RFC 5322 3.2.4: the quotes and pairs are not part of the mailbox), and unquoted when it needs no quotes
 * (`"rita"` is `rita`); so every way of writing a mailbox is held, compared and erased as one.
 */
function localPart(local: string): string | undefined {
  if (DOT_ATOM.test(local)) return local;
  if (!QUOTED.test(local)) return undefined;
  const unquoted = local.slice(1, -1).replace(/\\(.)/g, '$1');
  return DOT_ATOM.test(unquoted) ? unquoted : `"${unquoted.replace(/["\\]/g, '\\$&')}"`;
}

function asciiDomain(domain: string): string | undefined {
  const lower = domain.toLowerCase();
  if (lower.startsWith('[')) return DOMAIN_LITERAL.test(lower) ? domain : undefined;
  const ascii = domainName(lower);
  if (ascii === undefined) return undefined;
  // An ASCII domain stays as written (compared in lower case); an internationalized one is held in ASCII.
  return ascii === lower ? domain : ascii;
}

/**
 * A domain name as it is compared: lower-case, an internationalized one in its ASCII form (`Bücher.example` is
 * `xn--bcher-kva.example`); undefined when it is not one (a label too long or badly formed, one label only, an
 * all-digit top-level domain, over 253 characters). An address's domain and an organization's are read alike.
 */
export function domainName(input: string): string | undefined {
  const ascii = domainToASCII(input.toLowerCase());
  const labels = ascii.split('.');
  if (!ascii || ascii.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)))
    return undefined;
  // A top-level domain is never all digits (`1.2.3.4` is an address literal's business, in brackets).
  if (/^\d+$/.test(labels.at(-1) as string)) return undefined;
  return ascii;
}

/** The address without its `+token` (lower-case), and the token. */
export function splitAddress(address: string): { base: string; token: string | undefined } {
  const lower = address.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at < 0) return { base: lower, token: undefined };
  const local = lower.slice(0, at);
  const plus = local.indexOf('+');
  if (plus < 0) return { base: lower, token: undefined };
  return { base: `${local.slice(0, plus)}${lower.slice(at)}`, token: local.slice(plus + 1) || undefined };
}
