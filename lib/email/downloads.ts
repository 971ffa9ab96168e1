import { attachmentsPrefixOf, type MailObjectStore, mailStore } from '#lib/data/mail-store.ts';
import { NotFound } from '#lib/errors.ts';
import { getMessage } from '#lib/tickets/messages/read.ts';

/**
 * A message's raw mail and attachments, as received (decisions.md, "The e-mail channel"): `GET …/messages/{message}/raw`
 * and `GET …/messages/{message}/attachments/{attachment}`. The message is found as GET finds it (the account's
 * ticket, by uuid or reference, not in the trash), so another account's message is a 404 like any unknown one; its
 * mail is read from the store the environment names (a folder locally, the mail bucket deployed) at the place the
 * message recorded when it was received (the account's own copy). What the store no longer keeps (raw mail and
 * attachments are kept 30 days) is a 404 too.
 */

/**
 * Objects up to this size are the answer's body. A Lambda function's answer is at most 6 MB, base64 in it: 4 MiB
 * (5.6 MB as base64) fits with room for the headers. A larger object is a 303 to a link the store makes (S3: a
 * presigned GET valid LINK_SECONDS); a store without links (the folder, under the local gateway) serves it whole.
 */
export const INLINE_MAX_BYTES = 4 * 1024 * 1024;

export type Download =
  | { kind: 'bytes'; contentType: string; filename: string; bytes: Buffer }
  | { kind: 'link'; url: string };

/** The raw mail a message came from (`message/rfc822`): the bytes received, trace headers included. */
export async function rawMailOf(
  accountId: string,
  ticketRef: string,
  messageId: string,
  store?: MailObjectStore,
): Promise<Download> {
  const message = await getMessage(accountId, ticketRef, messageId);
  if (!message.source) throw new NotFound();
  return serve(store ?? mailStore(), message.source.rawKey, {
    filename: `${message.id}.eml`,
    contentType: 'message/rfc822',
  });
}

/**
 * One attachment of a message, always as `application/octet-stream` with its file name (Content-Disposition:
 * attachment): a mail's HTML or SVG is never rendered on the API's own origin. Its type is in the message's list.
 */
export async function attachmentOf(
  accountId: string,
  ticketRef: string,
  messageId: string,
  attachmentId: string,
  store?: MailObjectStore,
): Promise<Download> {
  const message = await getMessage(accountId, ticketRef, messageId);
  const attachment = message.attachments?.find((a) => a.id === attachmentId.trim());
  // A mail SES found a virus in (`email.virus`): its attachments are listed, never kept nor served.
  if (!message.source || !attachment || message.email?.virus === true) throw new NotFound();
  const { inboundId, rawKey } = message.source;
  // The store is named by the environment only once there is something to read in it.
  const key = `${attachmentsPrefixOf(accountId, inboundId, rawKey)}${attachment.id}`;
  return serve(store ?? mailStore(), key, {
    filename: String(attachment.filename),
    contentType: 'application/octet-stream',
  });
}

async function serve(
  store: MailObjectStore,
  key: string,
  as: { filename: string; contentType: string },
): Promise<Download> {
  const size = await store.size(key);
  if (size === undefined) throw new NotFound();
  if (size > INLINE_MAX_BYTES) {
    const url = await store.link(key, as);
    if (url) return { kind: 'link', url };
  }
  return { kind: 'bytes', ...as, bytes: await store.read(key) };
}
