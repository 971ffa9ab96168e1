import { keyedHash, sameHash } from '#lib/keyed-hash.ts';
import { splitAddress } from './addresses.ts';

/**
 * The `+token` forms of an account's addresses that only the service can make (decisions.md, "The e-mail
 * channel": threading rule 1, delivery reports). A token is a ticket's reference, for a mail's envelope sender
 * also the mail (`.<message number>` or `.ack`), then `-` and a tag: the first 40 bits of a keyed hash
 * (HMAC-SHA256 under the service's key-hash secret, lib/keyed-hash.ts) of the account and that text,
 * base32. `support+nw-000123-k3f9q2za@…` is ticket NW-000123's reply address, `support+nw-000123.4-…@…` the
 * envelope sender of its message 4. A reference alone, or with a tag made for another ticket, mail or account,
 * is no token: guessing a tag is one mail per try against 2^40.
 *
 * The tag is bound to the reference, not the ticket's uuid: references are never reused in an account
 * (decisions.md, "Tickets"), and a report of a mail whose ticket was since purged can still be verified.
 */

/** What a verified token names: a ticket (its reference), and for an envelope sender one of its mails. */
export interface MailToken {
  reference: string;
  mail: number | 'ack' | undefined;
}

const TAG = /^(.+)-([a-z2-7]{8})$/;
const ENVELOPE = /^(.+)\.(\d{1,10}|ack)$/;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** The tag of a token's text in an account: 8 base32 characters. */
function tagOf(accountId: string, text: string): string {
  const bytes = Buffer.from(keyedHash(`mail-token:${accountId}:${text}`).slice(0, 10), 'hex');
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let tag = '';
  for (let shift = 35n; shift >= 0n; shift -= 5n) tag += BASE32[Number((bits >> shift) & 31n)];
  return tag;
}

/** The token of a ticket's reference (`mail`: its envelope sender's form for that mail). */
export function mailToken(accountId: string, reference: string, mail?: number | 'ack'): string {
  const text = `${reference.toLowerCase()}${mail === undefined ? '' : `.${mail}`}`;
  return `${text}-${tagOf(accountId, text)}`;
}

/** `local+token@domain` of one of the account's addresses. */
export function tokenAddress(address: string, token: string): string {
  const at = address.lastIndexOf('@');
  return `${address.slice(0, at)}+${token}${address.slice(at)}`;
}

/** What a token names when its tag is the account's own for it (compared in constant time); else undefined. */
export function readToken(accountId: string, token: string): MailToken | undefined {
  const [, text, tag] = TAG.exec(token.toLowerCase()) ?? [];
  if (!text || !tag || !sameHash(tag, tagOf(accountId, text))) return undefined;
  const envelope = ENVELOPE.exec(text);
  if (!envelope) return { reference: text, mail: undefined };
  const mail = envelope[2] === 'ack' ? 'ack' : Number(envelope[2]);
  return { reference: envelope[1] as string, mail };
}

/**
 * The verified tokens of the recipients that are one of the account's addresses (`own`) in a `+token` form whose
 * tag is the service's, in the recipients' order: what a reply or a delivery report names.
 */
export function tokensOfRecipients(
  accountId: string,
  own: ReadonlySet<string>,
  recipients: readonly string[],
): MailToken[] {
  return recipients.flatMap((recipient) => {
    const { base, token } = splitAddress(recipient);
    const named = token && own.has(base) ? readToken(accountId, token) : undefined;
    return named ? [named] : [];
  });
}
