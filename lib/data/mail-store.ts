/**
 * Where raw mail and attachments are kept (docs/email.md, "One code path, two worlds"): a folder under
 * `npm start` and in tests, an S3 bucket deployed (the stage's mail bucket, where SES writes each raw mail). Both
 * stores answer the same calls; nothing above this file knows which it has. Keys are paths in the store: a delivery
 * as the receiver kept it (`raw/<SES message id>`; the SMTP server's `incoming/<inbound id>.eml`), until each
 * account it was for has its own copy: `mail/<account>/<inbound id>.eml` (the raw mail) and
 * `attachments/<account>/<inbound id>/<attachment id>` (decisions.md: one delivery to several accounts is several
 * mails, and nothing one account does touches another's).
 *
 * One concern a file under lib/data/mail-store/: what a store, its erasure and its purge answer (types.ts); where
 * things are kept (layout.ts); the folder store (folder.ts) and its erasure (folder-eraser.ts); the S3 store
 * (s3.ts) and its erasure (s3-eraser.ts); the store the environment names (environment.ts).
 */
export {
  hasMailStore,
  MAIL_BUCKET_VARIABLE,
  MAIL_DIR_VARIABLE,
  mailEraser,
  mailPurger,
  mailStore,
} from './mail-store/environment.ts';
export { folderMailStore } from './mail-store/folder.ts';
export { folderMailEraser } from './mail-store/folder-eraser.ts';
export {
  ATTACHMENTS_PREFIX,
  attachmentKey,
  attachmentsPrefix,
  attachmentsPrefixOf,
  MAIL_COPIES_PREFIX,
  queueRecordName,
  RAW_MAIL_PREFIX,
  rawCopyKey,
  SENT_FOLDER,
  sentMailName,
} from './mail-store/layout.ts';
export { contentDisposition, LINK_SECONDS, s3MailStore } from './mail-store/s3.ts';
export { s3MailEraser } from './mail-store/s3-eraser.ts';
export {
  ERASED_CONTENT,
  type MailEraser,
  type MailObjectStore,
  type MailPurger,
} from './mail-store/types.ts';
