/**
 * What an erasure replaces, and how (decisions.md, "Deleting, restoring and erasing"). Pure: the job
 * (lib/erasures/job.ts) applies it to every copy of the person it finds, stored items and event bodies alike.
 */

import { ERASED_CONTENT } from '#lib/data/mail-store.ts';

/** What replaces the person's words and what they wrote (the mail store's files get the same text). */
export const ERASED = ERASED_CONTENT;

/** The person's identifiers: the address, the name as written and its parts, the phone. */
export interface Person {
  email: string;
  names: string[];
  phones: string[];
}

/** The identifiers of a person, with a name and phone found on one of their objects added. */
export function withIdentity(person: Person, name: string | null | undefined, phone?: string | null): Person {
  const names = new Set(person.names);
  for (const part of namesOf(name)) names.add(part);
  const phones = new Set(person.phones);
  if (phone?.trim()) phones.add(phone.trim().normalize('NFC'));
  return { email: person.email, names: [...names], phones: [...phones] };
}

/**
 * A full name and its parts (each word of two letters or more: a one-letter initial is no identifier alone), in
 * Unicode's composed form (NFC): `Mary-Jane` gives `Mary` and `Jane` too (words split at spaces and hyphens).
 */
export function namesOf(name: string | null | undefined): string[] {
  const full = name?.trim().normalize('NFC');
  if (!full) return [];
  const parts = full.split(/[\s\-\u2010\u2011\u2013\u2014]+/).filter((p) => [...p].length >= 2);
  return [...new Set([full, ...parts])];
}

/** Digits a phone must end with to be found written another way (`+44 20 7946 0991`, `020-7946-0991`). */
const PHONE_TAIL_DIGITS = 8;

/**
 * A phone however it is written: its last digits (PHONE_TAIL_DIGITS, or all of a shorter one) with any of the
 * usual separators between them, not followed by another digit. The national and the international form of a
 * number share them (`+44 20 7946 0991` and `020 7946 0991` end the same), so either finds the other.
 */
function phoneDigitsPattern(phone: string): string | undefined {
  const digits = phone.replace(/\D/g, '');
  if (digits.length < 6) return undefined;
  const tail = digits.slice(-PHONE_TAIL_DIGITS);
  return `${[...tail].join('[\\s().\\-/]*')}(?!\\d)`;
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The pattern of every identifier: the address and phones anywhere, names as whole words (so `Ann` leaves
 * `Annual` alone), longest first (the full name before its parts), any case.
 */
export function personPattern(person: Person): RegExp {
  const words = [...person.names].sort((a, b) => b.length - a.length).map(literal);
  // The address also as a URL or a form encodes it (`rita%40customer.test`).
  const addresses = [person.email, encodeURIComponent(person.email)];
  const anywhere = [...new Set([...addresses, ...person.phones])].filter(Boolean).map(literal);
  const phoneDigits = person.phones.flatMap((phone) => phoneDigitsPattern(phone) ?? []);
  const alternatives = [
    ...anywhere,
    ...(words.length ? [`(?<![\\p{L}\\p{N}])(?:${words.join('|')})(?![\\p{L}\\p{N}])`] : []),
    ...phoneDigits,
  ];
  return new RegExp(alternatives.join('|'), 'giu');
}

/**
 * A text with every identifier replaced. A text is compared in its composed form (NFC), as the names are kept,
 * so `Zoë` written with a combining diaeresis is found too; a text that holds none is returned as it is.
 */
export function redactText(text: string, pattern: RegExp): string {
  const composed = text.normalize('NFC');
  pattern.lastIndex = 0;
  if (!pattern.test(composed)) return text;
  pattern.lastIndex = 0;
  return composed.replace(pattern, ERASED);
}

/** What a value's redaction knows beyond the person (lib/erasures/copies.ts passes it for a ticket's copies). */
export interface RedactOptions {
  /**
   * The ticket's description is the person's words though they are not its requester (a follow-up their mail
   * opened on someone else's closed ticket): its copies (events) show no mail fields to tell it by.
   */
  descriptionByPerson?: boolean | undefined;
}

/**
 * A stored or shown value with the person taken out: a requester who is the person loses name, e-mail and phone
 * (`erased: true`), what they wrote (a ticket's description, their messages' bodies, a message whose mail is
 * from them on anyone's ticket) becomes `[erased]`, a deal's contact who is the person keeps only its uuid (and
 * id), and every other string has the identifiers replaced. Works on the stored (camelCase) and the shown
 * (snake_case) shapes alike; returns a new value.
 */
export function redactValue(
  value: unknown,
  person: Person,
  pattern = personPattern(person),
  options: RedactOptions = {},
): unknown {
  const isPerson = (email: unknown) => typeof email === 'string' && email.toLowerCase() === person.email;
  const fromOf = (mail: unknown) =>
    (mail as { email?: { from?: { email?: unknown } } } | undefined)?.email?.from?.email;
  const walk = (node: unknown, parentRequested: boolean): unknown => {
    if (typeof node === 'string') return redactText(node, pattern);
    if (node instanceof Uint8Array) return node;
    if (Array.isArray(node)) return node.map((n) => walk(n, parentRequested));
    // Only plain maps are walked: a stored decimal (NumberValue) or a set is kept as it is.
    if (node === null || typeof node !== 'object' || !isPlain(node)) return node;
    const source = node as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const requester = source.requester as Record<string, unknown> | undefined;
    const requested = parentRequested || isPerson(requester?.email) || requester?.erased === true;
    const author = source.author as Record<string, unknown> | undefined;
    const authorIsPerson = author?.type === 'requester' && (requested || isPerson(author.email));
    // A mail from the person: on someone else's ticket its author is that ticket's requester, its sender them.
    const authored = authorIsPerson || (author !== undefined && isPerson(fromOf(source)));
    const describedByPerson =
      requested ||
      (requester !== undefined &&
        (options.descriptionByPerson === true || isPerson(fromOf(source.descriptionEmail))));
    for (const [key, child] of Object.entries(source)) {
      if (key === 'requester' && requested && child && typeof child === 'object') {
        out[key] = erasedRequester(child as Record<string, unknown>);
      } else if (key === 'author' && authorIsPerson && child && typeof child === 'object') {
        out[key] = { ...(child as Record<string, unknown>), name: null, email: null };
      } else if (key === 'contact' && child && typeof child === 'object' && isPersonContact(child)) {
        out[key] = erasedContact(child as Record<string, unknown>);
      } else if ((key === 'description' && describedByPerson) || (key === 'body' && authored)) {
        out[key] = typeof child === 'string' ? ERASED : child;
      } else if (CUSTOM_FIELDS.has(key) && child && typeof child === 'object' && isPlain(child)) {
        out[key] = redactedFields(child as Record<string, unknown>, pattern, (n) => walk(n, requested));
      } else if (
        (key === 'descriptionEmail' && describedByPerson) ||
        ((key === 'email' || key === 'attachments') && authored && typeof child === 'object')
      ) {
        out[key] = erasedMail(child, pattern);
      } else out[key] = walk(child, requested && key !== 'messages');
    }
    return out;
  };
  const isPersonContact = (c: object) => {
    const contact = c as Record<string, unknown>;
    return isPerson(contact.email) || contact.erased === true;
  };
  return walk(value, false);
}

/** A ticket's custom fields, stored (camelCase) and shown (snake_case). */
const CUSTOM_FIELDS = new Set(['customFields', 'custom_fields']);

/**
 * Custom field values: a text as any other; a number too, as the text the list filter compares it by (a phone
 * kept as a number, `442079460555`, is the person's phone digits): `[erased]` when it holds an identifier.
 */
function redactedFields(
  fields: Record<string, unknown>,
  pattern: RegExp,
  walk: (node: unknown) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value !== 'number') out[key] = walk(value);
    else out[key] = redactText(String(value), pattern) === String(value) ? value : ERASED;
  }
  return out;
}

const isPlain = (node: object) => {
  const proto = Object.getPrototypeOf(node);
  return proto === Object.prototype || proto === null;
};

function erasedRequester(r: Record<string, unknown>): Record<string, unknown> {
  return { ...r, name: null, email: null, phone: null, erased: true };
}

function erasedContact(c: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if ('id' in c) out.id = c.id;
  out.uuid = c.uuid;
  for (const key of ['fullName', 'full_name', 'email']) if (key in c) out[key] = null;
  out.erased = true;
  return out;
}

/**
 * A mail's fields of what the person wrote (headers, attachments' names): every text is `[erased]`, the structure,
 * attachment ids, types and sizes kept (the attachment itself is erased in the mail store), and the service's own
 * words about the mail (how it threaded, the automatic mail's kind: values of the API's enums) kept too. The mail's
 * ids (its Message-ID, the kept mail's inbound id and raw key) are kept unless they name the person: they are
 * ids, not what anyone wrote, and the purge finds the mail's Message-ID items by them (lib/data/mail/message-ids.ts
 * mailIdKeysOf); a Message-ID naming the person is `[erased]` (its item the erasure deletes: eraseMailCopies).
 */
const KEPT_MAIL_FIELDS = new Set(['id', 'content_type', 'size', 'matched_by', 'automatic']);
const MAIL_ID_FIELDS = new Set(['message_id', 'inboundId', 'rawKey']);
function erasedMail(mail: unknown, pattern: RegExp, key?: string): unknown {
  if (typeof mail === 'string') {
    if (key && KEPT_MAIL_FIELDS.has(key)) return mail;
    if (key && MAIL_ID_FIELDS.has(key)) {
      pattern.lastIndex = 0;
      return pattern.test(mail) ? ERASED : mail;
    }
    return ERASED;
  }
  if (Array.isArray(mail)) return mail.map((m) => erasedMail(m, pattern));
  if (mail && typeof mail === 'object') {
    return Object.fromEntries(Object.entries(mail).map(([k, v]) => [k, erasedMail(v, pattern, k)]));
  }
  return mail;
}

/** Whether a text still holds one of the identifiers (the job's checks and the tests). */
export function holdsPerson(text: string, person: Person): boolean {
  const pattern = personPattern(person);
  pattern.lastIndex = 0;
  return pattern.test(text);
}
