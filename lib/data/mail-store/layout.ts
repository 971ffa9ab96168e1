/** Where things are kept in a mail store: the keys of raw mail and attachments, and the local folders' names. */

/**
 * Where SES writes each raw mail in the bucket (the receipt rule's S3 action: this prefix + SES's message id): one
 * object per delivery, removed once each account it was for has its copy (lib/email/copies.ts).
 */
export const RAW_MAIL_PREFIX = 'raw/';
/** Where each account keeps its own copy of a received mail's raw bytes (rawCopyKey). */
export const MAIL_COPIES_PREFIX = 'mail/';
/** Where attachments are kept, each account's under its own prefix (attachmentKey). */
export const ATTACHMENTS_PREFIX = 'attachments/';

/** The account's copy of a received mail's raw bytes. */
export const rawCopyKey = (accountId: string, inboundId: string) =>
  `${MAIL_COPIES_PREFIX}${accountId}/${inboundId}.eml`;

/** Where the account keeps the attachments of a received mail. */
export const attachmentsPrefix = (accountId: string, inboundId: string) =>
  `${ATTACHMENTS_PREFIX}${accountId}/${inboundId}/`;

/** Where the account keeps one attachment of a received mail. */
export const attachmentKey = (accountId: string, inboundId: string, attachmentId: string) =>
  `${attachmentsPrefix(accountId, inboundId)}${attachmentId}`;

/**
 * The attachments' place of a mail as its message or inbound entry recorded it: the account's own, or for mail kept
 * before accounts had their own copies (its raw key the delivery's, `raw/…`), the delivery's `attachments/<inbound id>/`.
 */
export const attachmentsPrefixOf = (accountId: string, inboundId: string, rawKey: string) =>
  rawKey.startsWith(MAIL_COPIES_PREFIX)
    ? attachmentsPrefix(accountId, inboundId)
    : `${ATTACHMENTS_PREFIX}${inboundId}/`;

/** The name of the local queue's record of one account's copy (infra/local/mail.ts: `pending/`, then `done/`). */
export const queueRecordName = (inboundId: string, accountId: string) => `${inboundId}.${accountId}.json`;

/** The local queue's folders (infra/local/mail.ts): a copy's record waits in `pending/`, then stays a while in `done/`. */
export const QUEUE_FOLDERS = ['pending', 'done'];

/** Where the folder sender keeps a sent mail (lib/email/senders.ts): `sent/` + this, found again by its Message-ID. */
export const sentMailName = (messageId: string) => `${messageId.replace(/[^A-Za-z0-9._@+=-]/g, '_')}.eml`;
export const SENT_FOLDER = 'sent';
