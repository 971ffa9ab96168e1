import type { MailSource } from '#lib/tickets/messages/message.ts';
import {
  ATTACHMENT_REASONS,
  type AttachmentCopier,
  importedAttachmentId,
  importedPlace,
  MAX_ATTACHMENT_BYTES,
  type StoredAttachment,
} from './attachments.ts';
import type { ImportErrorRow, ImportedTicket } from './records.ts';
import { SourceAnswered, SourceHostRefused, SourceTooLarge } from './source-errors.ts';
import type { ImportContext, ImportOutcome } from './writing.ts';

/**
 * A ticket's attachments, copied before its commit (lib/imports/tickets.ts): each message's (the description's
 * too) into the account's mail store through the job's copier, or, without one (validate), decided only. One past
 * 25 MiB, on a host the source does not use for attachments, refused by the source (a 404) or by its reader when it
 * read it (`refused`: an ndjson file's URL, or content that is not what it says) is an error row and left out; the source being unavailable fails the page as its reads do (the job pauses and writes it again).
 */

export interface MessageFiles {
  attachments: StoredAttachment[];
  source: MailSource;
}

export interface TicketFiles {
  /** By message source id: its stored attachments and their place (messages with none are absent). */
  byMessage: Map<string, MessageFiles>;
  counts: Partial<Record<ImportOutcome, number>>;
  errors: ImportErrorRow[];
}

const { tooLarge: TOO_LARGE, noHost: NO_HOST } = ATTACHMENT_REASONS;

function reasonOf(error: unknown): string | undefined {
  if (error instanceof SourceTooLarge) return TOO_LARGE;
  if (error instanceof SourceHostRefused)
    return 'The attachment is on a host the source does not use for attachments: not fetched';
  if (error instanceof SourceAnswered) return `The source answered HTTP ${error.status} for the attachment`;
  return undefined;
}

const add = (files: TicketFiles, outcome: ImportOutcome) => {
  files.counts[outcome] = (files.counts[outcome] ?? 0) + 1;
};

/**
 * Copies every attachment of the ticket's messages (one at a time: the page writes tickets at once). `fresh`: the
 * ticket is created now, so each is `created` even when a run stopped before its commit had stored it already.
 */
export async function copyTicketFiles(
  ctx: ImportContext,
  copier: AttachmentCopier,
  record: ImportedTicket,
  fresh: boolean,
): Promise<TicketFiles> {
  const files: TicketFiles = { byMessage: new Map(), counts: {}, errors: [] };
  for (const message of record.messages) {
    const source = importedPlace(ctx.accountId, ctx.source, message.sourceId);
    const attachments: StoredAttachment[] = [];
    for (const attachment of message.attachments) {
      const id = importedAttachmentId(ctx.source, message.sourceId, attachment.sourceId);
      if (attachment.refused !== undefined) {
        files.errors.push({ type: 'attachments', sourceId: attachment.sourceId, reason: attachment.refused });
        add(files, 'failed');
        continue;
      }
      try {
        const copied = await copier.copy(ctx.accountId, source, id, attachment);
        attachments.push(copied.stored);
        add(files, fresh || copied.created ? 'created' : 'unchanged');
      } catch (error) {
        const reason = reasonOf(error);
        if (reason === undefined) throw error;
        files.errors.push({ type: 'attachments', sourceId: attachment.sourceId, reason });
        add(files, 'failed');
      }
    }
    if (attachments.length > 0) files.byMessage.set(message.sourceId, { attachments, source });
  }
  return files;
}

/**
 * The attachments' outcome without a copy: all `failed` or `unchanged` with their ticket; else one its reader
 * refused is an error row; else, validating, `created` but one whose stated size passes 25 MiB (an error row); else
 * (a run without a copier: a source with no attachment host, or a process with no mail store) each an error row.
 */
export function decideTicketFiles(
  record: ImportedTicket,
  ticket: ImportOutcome,
  validate: boolean,
): TicketFiles {
  const files: TicketFiles = { byMessage: new Map(), counts: {}, errors: [] };
  for (const attachment of record.messages.flatMap((m) => m.attachments)) {
    const reason =
      attachment.refused ??
      (!validate ? NO_HOST : (attachment.size ?? 0) > MAX_ATTACHMENT_BYTES ? TOO_LARGE : undefined);
    if (ticket === 'failed' || ticket === 'unchanged') add(files, ticket);
    else if (reason) {
      files.errors.push({ type: 'attachments', sourceId: attachment.sourceId, reason });
      add(files, 'failed');
    } else add(files, 'created');
  }
  return files;
}
