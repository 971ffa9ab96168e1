import type { Readable } from 'node:stream';
import {
  type AttachmentStream,
  type HeaderValue,
  MailParser,
  type MailParserOptions,
  type MessageText,
} from 'mailparser';
import {
  clean,
  cutMarked,
  headerText,
  type KeptSender,
  keptAddresses,
  messageIds,
  senderOf,
} from './header-values.ts';
import { capTextParts, type MailText, textOf } from './mail-text.ts';

/**
 * A raw mail read once, as a stream (docs/email.md, "The body"): mailparser decodes MIME (multipart, transfer
 * encodings, charsets, encoded words; an HTML-only mail becomes text), each attachment is handed to `keep` as
 * it streams by (never the whole mail in memory), and the text is cut and its quoted history and signature
 * found (./mail-text.ts). What is kept is bounded whatever the mail holds (decisions.md, "Bounded"): addresses,
 * names, subject, text.
 */

/** At most this many attachments are kept and listed; the rest are counted (`attachments_omitted`). */
export const MAX_KEPT_ATTACHMENTS = 100;
/** Headers of one MIME node beyond this are refused (the mail is logged `rejected`): 4 MiB. */
const MAX_HEAD_BYTES = 4 * 1024 * 1024;
export interface KeptAttachment {
  id: string;
  filename: string;
  content_type: string;
  size: number;
}

export interface ParsedMail extends MailText, KeptSender {
  /** A header as sent (lower-case name, unfolded, first occurrence), for the classifier. */
  header: (name: string) => string | undefined;
  contentType: string;
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

/** What the parser hands over as it reads: the headers (decoded and as sent), the text, the attachments kept. */
interface Heard {
  headers: Map<string, HeaderValue>;
  rawHeaders: Map<string, string>;
  authenticationResults: string[];
  text: MessageText | undefined;
  attachments: KeptAttachment[];
  /** Each attachment's store, awaited once the parse ends. */
  keeping: Promise<void>[];
  omitted: number;
}

/** Reads a raw mail once (see above): its attachments to `keep` as they stream by, what is kept bounded. */
export async function parseMail(raw: Readable, keep: KeepAttachment): Promise<ParsedMail> {
  const parser = new MailParser({
    skipImageLinks: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    // mailsplit's own limit (1 MiB of headers per MIME node) refuses a 2 MB header block; more is refused.
    maxHeadSize: MAX_HEAD_BYTES,
  } as MailParserOptions);
  const textCut = capTextParts(parser);
  const heard: Heard = {
    headers: new Map(),
    rawHeaders: new Map(),
    authenticationResults: [],
    text: undefined,
    attachments: [],
    keeping: [],
    omitted: 0,
  };
  hearHeaders(parser, heard);
  hearParts(parser, heard, keep);

  await new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
    raw.on('error', reject);
    raw.pipe(parser);
  });
  await Promise.all(heard.keeping);
  return parsedFrom(heard, textCut());
}

/** The headers as mailparser decodes them, and as sent. */
function hearHeaders(parser: MailParser, heard: Heard): void {
  parser.on('headers', (h: Map<string, HeaderValue>) => {
    heard.headers = h;
  });
  // The classifier reads headers as sent (mailparser folds List-* into one structured `list` entry).
  parser.on('headerLines', (lines: { key: string; line: string }[]) => {
    heard.rawHeaders = new Map();
    heard.authenticationResults = [];
    for (const { key, line } of lines) {
      const value = () => clean(line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ')).trim();
      if (key === 'authentication-results' && heard.authenticationResults.length < 20) {
        heard.authenticationResults.push(value());
      }
      if (!heard.rawHeaders.has(key)) heard.rawHeaders.set(key, value());
    }
  });
}

/** The text, and each attachment handed to `keep` as it streams by (past MAX_KEPT_ATTACHMENTS: counted, drained). */
function hearParts(parser: MailParser, heard: Heard, keep: KeepAttachment): void {
  parser.on('data', (data: AttachmentStream | MessageText) => {
    if (data.type === 'text') {
      heard.text = data;
      return;
    }
    if (heard.attachments.length >= MAX_KEPT_ATTACHMENTS) {
      heard.omitted += 1;
      data.content.on('end', () => data.release?.());
      (data.content as Readable).resume();
      return;
    }
    const kept: KeptAttachment = {
      id: `att_${String(heard.attachments.length + 1).padStart(4, '0')}`,
      filename: cutMarked(clean(data.filename ?? 'attachment')),
      content_type: cutMarked(data.contentType || 'application/octet-stream'),
      size: 0,
    };
    heard.attachments.push(kept);
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
    heard.keeping.push(stored);
  });
}

/** The mail as kept, from what the parse heard (`partCut`: a text part was cut at its limit). */
function parsedFrom(heard: Heard, partCut: boolean): ParsedMail {
  const { headers } = heard;
  const header = (name: string) => {
    const t = headerText(headers.get(name));
    return t === undefined ? undefined : clean(t);
  };
  const rawHeader = (name: string) => heard.rawHeaders.get(name);
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
    ...textOf(clean(heard.text?.text ?? ''), partCut),
    authenticationResults: heard.authenticationResults,
    attachments: heard.attachments,
    attachmentsOmitted: heard.omitted,
  };
}
