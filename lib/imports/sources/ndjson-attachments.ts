import { ATTACHMENT_REASONS, type AttachmentFiles, MAX_ATTACHMENT_BYTES } from '../attachments.ts';
import type { ImportedAttachment } from '../records.ts';
import { SourceHostRefused, SourceTooLarge } from '../source-errors.ts';

/**
 * The attachments of deskpipe's import format (docs/import-format.md, "Attachments"). An attachment carries its bytes
 * in its line, `content` in base64: they come from the customer's own upload, so nothing is fetched and no host is
 * trusted. One naming a `url` instead is an error row: the service never fetches from hosts an uploaded file names
 * (anyone may upload a file, and a URL of theirs would make the import reach wherever they point it: SSRF).
 *
 * Every check is made when the line is read (pure, nothing decoded): content that is not base64, whose decoded size
 * differs from a stated `size`, or passes 25 MiB is refused there, so a validate run gives the error rows a run
 * does. The bytes are decoded only when copied (INLINE_FILES), one attachment at a time.
 */

/** RFC 4648 base64 (the standard alphabet, padded, no line breaks); length a multiple of 4 checked apart. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const INLINE_REASONS = {
  notBase64:
    'The attachment content is not base64 (the standard alphabet, padded, with no line breaks): not copied',
  sizeDiffers: (decoded: number, stated: number) =>
    `The attachment content is ${decoded} bytes, but its size says ${stated}: not copied`,
} as const;

/** A line's attachment, as the record the engine takes: `refused` says why it is not copied, if it is not. */
export function lineAttachment(a: {
  id: string;
  file_name: string;
  content_type: string;
  size: number | null;
  url?: string | null | undefined;
  content?: string | null | undefined;
}): ImportedAttachment {
  const named = { sourceId: a.id, fileName: a.file_name, contentType: a.content_type };
  if (a.content == null)
    return { ...named, size: a.size, url: a.url ?? undefined, refused: ATTACHMENT_REASONS.noHost };
  const decoded = decodedSize(a.content);
  const refused =
    decoded === undefined
      ? INLINE_REASONS.notBase64
      : decoded > MAX_ATTACHMENT_BYTES || (a.size ?? 0) > MAX_ATTACHMENT_BYTES
        ? ATTACHMENT_REASONS.tooLarge
        : a.size !== null && a.size !== decoded
          ? INLINE_REASONS.sizeDiffers(decoded, a.size)
          : undefined;
  return { ...named, size: decoded ?? a.size, content: a.content, ...(refused ? { refused } : {}) };
}

/** The bytes base64 `text` decodes to, counted without decoding; undefined when it is not base64. */
function decodedSize(text: string): number | undefined {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return (text.length / 4) * 3 - padding;
}

/** An ndjson file's attachments: decoded from the line (checked when it was read); never fetched. */
export const INLINE_FILES: AttachmentFiles = {
  async getBytes(attachment, maxBytes) {
    if (attachment.content === undefined || attachment.refused !== undefined)
      throw new SourceHostRefused('an ndjson attachment without checked content is never fetched');
    const bytes = Buffer.from(attachment.content, 'base64');
    if (bytes.length > maxBytes) throw new SourceTooLarge(maxBytes);
    return bytes;
  },
};
