import type { Readable } from 'node:stream';
import {
  type AddressObject,
  type AttachmentStream,
  type HeaderValue,
  MailParser,
  type MailParserOptions,
  type MessageText,
} from 'mailparser';
import { canonicalAddress, readAddress } from './addresses.ts';
import { capTextParts, type MailText, textOf } from './mail-text.ts';

/**
 * A raw mail read once, as a stream (docs/email.md, "Parsing"): mailparser decodes MIME (multipart, transfer
 * encodings, charsets, encoded words; an HTML-only mail becomes text), each attachment is handed to `keep` as
 * it streams by (never the whole mail in memory), and the text is cut and its quoted history and signature
 * found (./mail-text.ts). What is kept is bounded whatever the mail holds (decisions.md, "Bounded"): addresses,
 * names, subject, text.
 */

/** At most this many attachments are kept and listed; the rest are counted (`attachments_omitted`). */
export const MAX_KEPT_ATTACHMENTS = 100;
/** At most this many To and Cc addresses are kept each; the header's count is kept beside them. */
export const MAX_KEPT_ADDRESSES = 50;
/** Names, subjects, attachment names and types are cut to this many characters, the last one `…`. */
export const MAX_NAME_LENGTH = 255;
/** Headers of one MIME node beyond this are refused (the mail is logged `rejected`): 4 MiB. */
const MAX_HEAD_BYTES = 4 * 1024 * 1024;
export interface KeptAttachment {
  id: string;
  filename: string;
  content_type: string;
  size: number;
}

export interface ParsedMail extends MailText {
  /** A header as sent (lower-case name, unfolded, first occurrence), for the classifier. */
  header: (name: string) => string | undefined;
  contentType: string;
  /** The first From address, held as readAddress holds it (lower case); undefined when none or unusable. */
  from: { email: string; name: string | null } | undefined;
  /** Why the From header's address is not used: over 254 characters, or not an address. */
  fromProblem: 'sender_address_too_long' | 'sender_address_invalid' | undefined;
  /** The first MAX_KEPT_ADDRESSES addresses of To and Cc (lower case), and how many each header named. */
  to: string[];
  cc: string[];
  toCount: number;
  ccCount: number;
  subject: string;
  messageId: string | undefined;
  inReplyTo: string | undefined;
  references: string[];
  /** Every top-level `Authentication-Results` header, top first (at most 20), for lib/email/authentication.ts. */
  authenticationResults: string[];
  attachments: KeptAttachment[];
  attachmentsOmitted: number;
}

/** Keeps one attachment's bytes (streamed) under the attachment's id; answers its size in bytes. */
export type KeepAttachment = (id: string, content: Readable) => Promise<number>;

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what is removed
const NUL = /\u0000/g;
const clean = (text: string) => text.replace(NUL, '');

function headerText(value: HeaderValue | undefined): string | undefined {
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
function keptAddresses(value: HeaderValue | undefined): { kept: string[]; count: number } {
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
function senderOf(value: HeaderValue | undefined): Pick<ParsedMail, 'from' | 'fromProblem'> {
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

export async function parseMail(raw: Readable, keep: KeepAttachment): Promise<ParsedMail> {
  const parser = new MailParser({
    skipImageLinks: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    // mailsplit's own limit (1 MiB of headers per MIME node) refuses a 2 MB header block; more is refused.
    maxHeadSize: MAX_HEAD_BYTES,
  } as MailParserOptions);
  const textCut = capTextParts(parser);
  let rawHeaders = new Map<string, string>();
  let authenticationResults: string[] = [];
  let headers = new Map<string, HeaderValue>();
  let text: MessageText | undefined;
  const attachments: KeptAttachment[] = [];
  const keeping: Promise<void>[] = [];
  let omitted = 0;

  parser.on('headers', (h: Map<string, HeaderValue>) => {
    headers = h;
  });
  // The classifier reads headers as sent (mailparser folds List-* into one structured `list` entry).
  parser.on('headerLines', (lines: { key: string; line: string }[]) => {
    rawHeaders = new Map();
    authenticationResults = [];
    for (const { key, line } of lines) {
      const value = () => clean(line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ')).trim();
      if (key === 'authentication-results' && authenticationResults.length < 20) {
        authenticationResults.push(value());
      }
      if (!rawHeaders.has(key)) rawHeaders.set(key, value());
    }
  });
  parser.on('data', (data: AttachmentStream | MessageText) => {
    if (data.type === 'text') {
      text = data;
      return;
    }
    if (attachments.length >= MAX_KEPT_ATTACHMENTS) {
      omitted += 1;
      data.content.on('end', () => data.release?.());
      (data.content as Readable).resume();
      return;
    }
    const kept: KeptAttachment = {
      id: `att_${String(attachments.length + 1).padStart(4, '0')}`,
      filename: cutMarked(clean(data.filename ?? 'attachment')),
      content_type: cutMarked(data.contentType || 'application/octet-stream'),
      size: 0,
    };
    attachments.push(kept);
    const stored = keep(kept.id, data.content as Readable).then(
      (size) => {
        kept.size = size;
        data.release?.();
      },
      (error: unknown) => {
        data.release?.();
        throw error;
      },
    );
    // Awaited once the parse ends: a store failure before then is not an unhandled rejection meanwhile.
    stored.catch(() => undefined);
    keeping.push(stored);
  });

  await new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
    raw.on('error', reject);
    raw.pipe(parser);
  });
  await Promise.all(keeping);

  const header = (name: string) => {
    const t = headerText(headers.get(name));
    return t === undefined ? undefined : clean(t);
  };
  const rawHeader = (name: string) => rawHeaders.get(name);
  const contentTypeValue = headers.get('content-type');
  const contentType = (
    (contentTypeValue && typeof contentTypeValue === 'object' && 'value' in contentTypeValue
      ? String(contentTypeValue.value)
      : (headerText(contentTypeValue) ?? 'text/plain')) || 'text/plain'
  ).toLowerCase();
  const to = keptAddresses(headers.get('to'));
  const cc = keptAddresses(headers.get('cc'));
  return {
    header: rawHeader,
    contentType,
    ...senderOf(headers.get('from')),
    to: to.kept,
    cc: cc.kept,
    toCount: to.count,
    ccCount: cc.count,
    subject: cutMarked((header('subject') ?? '').replace(/\s+/g, ' ').trim()),
    messageId: messageIds(header('message-id'))[0],
    inReplyTo: messageIds(header('in-reply-to'))[0],
    references: messageIds(header('references')),
    ...textOf(clean(text?.text ?? ''), textCut()),
    authenticationResults,
    attachments,
    attachmentsOmitted: omitted,
  };
}
