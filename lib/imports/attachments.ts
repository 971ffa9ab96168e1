import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { attachmentKey, type MailObjectStore, rawCopyKey } from '#lib/data/mail-store.ts';
import type { MailSource } from '#lib/tickets/messages/message.ts';
import type { ImportedAttachment, ImportSource } from './records.ts';
import { SourceTooLarge } from './source-errors.ts';

/**
 * Imported attachments, copied (issue 42; spec/decisions.md "Imports": from the source's own hosts only, within
 * the 25 MiB limit). Each is kept in the account's mail store as an e-mailed one is (attachments/<account>/<place>/
 * <id>, the same retention and purge), its message's `source` naming the place, so GET …/attachments/{id} serves
 * it. The place and the id are made of the message's and the attachment's source ids: a page written again (a
 * retry after a crash) finds the object kept and neither fetches nor stores it twice. Where the bytes come from is
 * the source's (AttachmentFiles): a vendor's are fetched from its hosts, an ndjson file's are carried in the file.
 */

/** The largest attachment copied (a larger one is an error row), as e-mail's. */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;

/** Error rows' reasons shared by the sources. */
export const ATTACHMENT_REASONS = {
  tooLarge: `The attachment passes ${MAX_ATTACHMENT_BYTES / 1024 / 1024} MiB: not copied`,
  noHost: 'The source has no host attachments are fetched from: not copied',
} as const;

/** A stored attachment as a message lists it (as e-mailed ones are). */
export type StoredAttachment = { id: string; filename: string; content_type: string; size: number };

/** Where a source's attachments' bytes come from (ImportSourceReader.files). */
export interface AttachmentFiles {
  /**
   * The attachment's bytes, at most `maxBytes` (else SourceTooLarge); SourceHostRefused for one it cannot or may
   * not get (a host the source does not use), before asking anything; the source's other failures as its reads do.
   */
  getBytes(attachment: ImportedAttachment, maxBytes: number): Promise<Uint8Array>;
}

/** What the ticket writer copies attachments with (the engine builds it from the job's source and the mail store). */
export interface AttachmentCopier {
  /**
   * Copies one attachment of a message into the account's mail store at `source` (the message's place), unless
   * kept there already; answers it as the message lists it and whether it was stored now (`created`) or found.
   * Throws SourceTooLarge (past MAX_ATTACHMENT_BYTES) and SourceHostRefused (a host the source does not use for
   * attachments) before anything is stored; the source's other failures as its reads do.
   */
  copy(
    accountId: string,
    source: MailSource,
    id: string,
    attachment: ImportedAttachment,
  ): Promise<{ stored: StoredAttachment; created: boolean }>;
}

const hash = (text: string, length: number) =>
  createHash('sha256').update(text).digest('hex').slice(0, length);

/** The mail-store place of an imported message's attachments (stable: the message's source key). */
export function importedPlace(accountId: string, source: ImportSource, messageSourceId: string): MailSource {
  const inboundId = `import-${hash(`${source}:messages:${messageSourceId}`, 32)}`;
  // rawKey under the account's copies: attachmentsPrefixOf finds the account's own prefix (no raw mail is kept).
  return { inboundId, rawKey: rawCopyKey(accountId, inboundId) };
}

/** An imported attachment's id (stable: its message's and its own source ids). */
export const importedAttachmentId = (
  source: ImportSource,
  messageSourceId: string,
  attachmentSourceId: string,
) => `att_${hash(`${source}:${messageSourceId}:${attachmentSourceId}`, 24)}`;

/**
 * The copier of a source's attachments (`files`: where their bytes come from) into a mail store: the key first (kept:
 * found, nothing read), then the bytes, stored under the key made of source ids (a copy stopped before its ticket's
 * commit is found by the next write, never stored twice).
 */
export function sourceAttachmentCopier(files: AttachmentFiles, store: MailObjectStore): AttachmentCopier {
  return {
    async copy(accountId, source, id, attachment) {
      const key = attachmentKey(accountId, source.inboundId, id);
      const listed = (size: number): StoredAttachment => ({
        id,
        filename: attachment.fileName,
        content_type: attachment.contentType,
        size,
      });
      const kept = await store.size(key);
      if (kept !== undefined) return { stored: listed(kept), created: false };
      if ((attachment.size ?? 0) > MAX_ATTACHMENT_BYTES) throw new SourceTooLarge(MAX_ATTACHMENT_BYTES);
      const bytes = await files.getBytes(attachment, MAX_ATTACHMENT_BYTES);
      const size = await store.putAttachment(key, Readable.from([bytes]));
      return { stored: listed(size), created: true };
    },
  };
}
