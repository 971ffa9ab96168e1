import type { Writable } from 'node:stream';
import type { MailParser } from 'mailparser';
import { MAX_MESSAGE_BODY } from '#lib/tickets/messages/message.ts';
import { fragmentsOf, visibleText } from './quoted-text.ts';

/**
 * A received mail's text (docs/email.md, "The body"): cut to MAX_MESSAGE_BODY characters before quoted history
 * and a signature are looked for (./quoted-text.ts), and never held whole in memory however long it is.
 */

/**
 * Of a text part, only its first this many bytes as sent (transfer-encoded) reach mailparser, which keeps a text
 * part whole: 1 MiB holds more than MAX_MESSAGE_BODY characters whatever the encoding and charset (quoted-printable
 * at most triples a byte, a character takes at most 4: over 87,000 characters), so a 25 MiB text costs no more
 * memory than a 25 MiB attachment. An HTML part's text may come out shorter (its markup is not text).
 */
const MAX_TEXT_PART_BYTES = 1024 * 1024;

export interface MailText {
  /** The text (text/plain part, else the HTML as text), NUL-free, its first MAX_MESSAGE_BODY characters. */
  text: string;
  /** The mail's text was longer than `text`. */
  textCut: boolean;
  /** The new text: quoted history and signature removed (the text as it is when nothing was). */
  visibleText: string;
  /** Quoted history or a signature was taken out of the text (never for trimmed blanks). */
  quotedTextRemoved: boolean;
}

/**
 * Lets only the first MAX_TEXT_PART_BYTES of each text part reach mailparser, which keeps a text part whole in
 * memory, and drops the rest as it streams by (the raw mail keeps it). Answers whether anything was dropped.
 * mailparser has no option for it: this wraps the write of the transfer decoder its createNode gives a part that
 * is not an attachment (mailparser 3.x; test/unit/mail-parse.test.ts shows it holds).
 */
export function capTextParts(parser: MailParser): () => boolean {
  let dropped = false;
  type Node = { decoder?: Writable; isAttachment?: boolean };
  const internal = parser as unknown as { createNode(data: unknown): Node };
  const createNode = internal.createNode.bind(parser);
  internal.createNode = (data) => {
    const node = createNode(data);
    const decoder = node.decoder;
    if (!decoder || node.isAttachment) return node;
    let written = 0;
    const write = decoder.write.bind(decoder) as (chunk: Buffer) => boolean;
    decoder.write = ((chunk: Buffer) => {
      const room = MAX_TEXT_PART_BYTES - written;
      if (chunk.length > room) dropped = true;
      if (room <= 0) return true;
      written += Math.min(room, chunk.length);
      return write(chunk.length > room ? chunk.subarray(0, room) : chunk);
    }) as Writable['write'];
    return node;
  };
  return () => dropped;
}

/** The text (NUL-free) cut to MAX_MESSAGE_BODY characters, then its new text (quoted history and signature out). */
export function textOf(whole: string, partCut: boolean): MailText {
  const trimmed = whole.trim();
  const textCut = partCut || trimmed.length > MAX_MESSAGE_BODY;
  const text = trimmed.length > MAX_MESSAGE_BODY ? trimmed.slice(0, MAX_MESSAGE_BODY).trimEnd() : trimmed;
  const visible = visibleTextOf(text);
  // All of it quoted (a forward, say): the body is the text itself, nothing taken out.
  return visible === undefined || visible === ''
    ? { text, textCut, visibleText: text, quotedTextRemoved: false }
    : { text, textCut, visibleText: visible, quotedTextRemoved: true };
}

/**
 * The reply's own text, when quoted history or a signature is taken out of it (its visible fragments); undefined
 * when nothing is (trimmed blanks are not taken out: the text stays as written).
 */
function visibleTextOf(text: string): string | undefined {
  if (text === '') return undefined;
  const fragments = fragmentsOf(text);
  const removed = fragments.some((f) => f.hidden && (f.quoted || f.signature));
  return removed ? visibleText(fragments).trim() : undefined;
}
