import type { Readable } from 'node:stream';
import EmailReplyParser from 'email-reply-parser';
import {
  type AddressObject,
  type AttachmentStream,
  type HeaderValue,
  MailParser,
  type MailParserOptions,
  type MessageText,
} from 'mailparser';

/**
 * A raw mail read once, as a stream (docs/email.md, "Parsing"): mailparser decodes MIME (multipart, transfer
 * encodings, charsets, encoded words; an HTML-only mail becomes text), each attachment is handed to `keep` as
 * it streams by (never the whole mail in memory), and email-reply-parser cuts quoted history and signature.
 */

/** At most this many attachments are kept and listed; the rest are counted (`attachments_omitted`). */
export const MAX_KEPT_ATTACHMENTS = 100;
/** Headers of one MIME node beyond this are refused (the mail is logged `rejected`): 4 MiB. */
const MAX_HEAD_BYTES = 4 * 1024 * 1024;
/** A header's text beyond this is cut where it is recorded (a Subject of 100,000 characters). */
const MAX_HEADER_TEXT = 998;

export interface KeptAttachment {
  id: string;
  filename: string;
  content_type: string;
  size: number;
}

export interface ParsedMail {
  /** A header as sent (lower-case name, unfolded, first occurrence), for the classifier. */
  header: (name: string) => string | undefined;
  contentType: string;
  from: { email: string; name: string | null } | undefined;
  to: string[];
  cc: string[];
  subject: string;
  messageId: string | undefined;
  inReplyTo: string | undefined;
  references: string[];
  /** The whole text (text/plain part, else the HTML as text), NUL-free. */
  text: string;
  /** The new text: quoted history and signature removed. */
  visibleText: string;
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

function addresses(value: HeaderValue | undefined): { email: string; name: string | null }[] {
  if (value === undefined || typeof value !== 'object' || value instanceof Date) return [];
  const objects = (Array.isArray(value) ? value : [value]) as AddressObject[];
  const out: { email: string; name: string | null }[] = [];
  const walk = (list: AddressObject['value']) => {
    for (const a of list ?? []) {
      if (a.group) walk(a.group);
      else if (a.address)
        out.push({ email: clean(a.address).toLowerCase(), name: a.name ? clean(a.name) : null });
    }
  };
  for (const o of objects) if (o && Array.isArray(o.value)) walk(o.value);
  return out;
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
      filename: clean(data.filename ?? 'attachment').slice(0, 255),
      content_type: data.contentType || 'application/octet-stream',
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
  const whole = clean(text?.text ?? '').trim();
  const visible = clean(visibleTextOf(whole)).trim();
  return {
    header: rawHeader,
    contentType,
    from: addresses(headers.get('from'))[0],
    to: addresses(headers.get('to')).map((a) => a.email),
    cc: addresses(headers.get('cc')).map((a) => a.email),
    subject: (header('subject') ?? '').replace(/\s+/g, ' ').trim().slice(0, MAX_HEADER_TEXT),
    messageId: messageIds(header('message-id'))[0],
    inReplyTo: messageIds(header('in-reply-to'))[0],
    references: messageIds(header('references')),
    text: whole,
    visibleText: visible === '' ? whole : visible,
    authenticationResults,
    attachments,
    attachmentsOmitted: omitted,
  };
}

/** The reply's own text: email-reply-parser's visible fragments (quoted history and signature left out). */
function visibleTextOf(text: string): string {
  if (text === '') return '';
  try {
    return new EmailReplyParser().parseReply(text);
  } catch {
    return text;
  }
}
