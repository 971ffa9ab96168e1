import type { AddressObject, HeaderValue } from 'mailparser';
import { canonicalAddress, readAddress } from './addresses.ts';

/**
 * A received mail's header values as mailparser decodes them, read into what is kept (lib/email/parse.ts): text
 * without NUL, names cut, addresses (groups flattened, at most MAX_KEPT_ADDRESSES a header), the sender, Message-IDs.
 */

/** At most this many To and Cc addresses are kept each; the header's count is kept beside them. */
export const MAX_KEPT_ADDRESSES = 50;
/** Names, subjects, attachment names and types are cut to this many characters, the last one `…`. */
export const MAX_NAME_LENGTH = 255;

/** The sender of a received mail as kept. */
export interface KeptSender {
  /** The first From address, held as readAddress holds it (lower case); undefined when none or unusable. */
  from: { email: string; name: string | null } | undefined;
  /** Why the From header's address is not used: over 254 characters, or not an address. */
  fromProblem: 'sender_address_too_long' | 'sender_address_invalid' | undefined;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what is removed
const NUL = /\u0000/g;
/** A text without its NUL characters. */
export const clean = (text: string) => text.replace(NUL, '');

/** A header's value as text (lists joined, dates as ISO text, structured values by their text). */
export function headerText(value: HeaderValue | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((v) => headerText(v as HeaderValue) ?? '').join(' ');
  if ('text' in value && typeof value.text === 'string') return value.text;
  if ('value' in value && typeof value.value === 'string') return value.value;
  return undefined;
}

/** A text cut to `max` characters, its last one `…` when cut (never half of a surrogate pair). */
export function cutMarked(text: string, max = MAX_NAME_LENGTH): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text.charAt(max - 2)) ? max - 2 : max - 1;
  return `${text.slice(0, end)}…`;
}

/** The addresses of a header as written (groups flattened), with their names. */
function addresses(value: HeaderValue | undefined): { address: string; name: string }[] {
  if (value === undefined || typeof value !== 'object' || value instanceof Date) return [];
  const objects = (Array.isArray(value) ? value : [value]) as AddressObject[];
  const out: { address: string; name: string }[] = [];
  const walk = (list: AddressObject['value']) => {
    for (const a of list ?? []) {
      if (a.group) walk(a.group);
      else if (a.address) out.push({ address: a.address, name: a.name ?? '' });
    }
  };
  for (const o of objects) if (o && Array.isArray(o.value)) walk(o.value);
  return out;
}

/** The first MAX_KEPT_ADDRESSES addresses of a header that are addresses (lower case), and the header's count. */
export function keptAddresses(value: HeaderValue | undefined): { kept: string[]; count: number } {
  const all = addresses(value);
  const kept: string[] = [];
  for (const { address } of all) {
    const held = canonicalAddress(clean(address));
    if (held) kept.push(held);
    if (kept.length === MAX_KEPT_ADDRESSES) break;
  }
  return { kept, count: all.length };
}

/** The sender: the first From address, if it is one. */
export function senderOf(value: HeaderValue | undefined): KeptSender {
  const [first] = addresses(value);
  if (!first) return { from: undefined, fromProblem: undefined };
  const read = readAddress(clean(first.address));
  if ('problem' in read) {
    const problem = read.problem === 'too_long' ? 'sender_address_too_long' : 'sender_address_invalid';
    return { from: undefined, fromProblem: problem };
  }
  const name = cutMarked(clean(first.name).trim());
  return { from: { email: read.address.toLowerCase(), name: name || null }, fromProblem: undefined };
}

/** Message-IDs in a header (`<a@b> <c@d>`), in order, without their angle brackets. */
export function messageIds(text: string | undefined): string[] {
  if (!text) return [];
  const found = [...text.matchAll(/<([^<>\s]{1,900})>/g)].map((m) => m[1] as string);
  if (found.length > 0) return found;
  const bare = text.trim();
  return bare && bare.length <= 900 && !/\s/.test(bare) ? [bare] : [];
}
