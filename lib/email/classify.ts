/**
 * The one classifier of automatic mail (decisions.md, "The e-mail channel"; docs/email.md, "Automatic mail").
 * A mail it names is recorded in the inbound log with the reason, never opens a ticket and is never answered,
 * so an auto-responder, a list or a bounce cannot start a loop. Checked in this order; the first match is the
 * reason:
 *
 * | reason            | when                                                                          |
 * | ----------------- | ----------------------------------------------------------------------------- |
 * | `delivery_report` | Content-Type multipart/report or message/delivery-status (a bounce, a DSN)    |
 * | `null_sender`     | the envelope sender is empty (`MAIL FROM:<>`), as delivery reports send       |
 * | `auto_submitted`  | `Auto-Submitted` present and not `no` (RFC 3834)                              |
 * | `x_autoreply`     | `X-Autoreply` or `X-Autorespond` present                                      |
 * | `precedence`      | `Precedence` is `bulk`, `junk`, `list` or `auto_reply`                        |
 * | `mailing_list`    | `List-Id` or `List-Unsubscribe` present                                       |
 * | `x_loop`          | `X-Loop` present                                                              |
 * | `system_sender`   | From's local part is mailer-daemon, postmaster, noreply, no-reply (any case)  |
 * | `own_address`     | From is one of the account's own addresses (receive/automatic.ts)             |
 */

export type AutomaticReason =
  | 'delivery_report'
  | 'null_sender'
  | 'auto_submitted'
  | 'x_autoreply'
  | 'precedence'
  | 'mailing_list'
  | 'x_loop'
  | 'system_sender'
  | 'own_address';

export interface ClassifyInput {
  /** Header name (lower-case) -> its text (unfolded, first occurrence). */
  header: (name: string) => string | undefined;
  /** The content type of the top part, lower-case (`multipart/report`). */
  contentType: string;
  /** The From address, lower-case (undefined when missing). */
  from: string | undefined;
  /** The envelope sender: '' for the null sender, undefined when unknown. */
  mailFrom: string | undefined;
}

const SYSTEM_LOCAL_PARTS = new Set(['mailer-daemon', 'postmaster', 'noreply', 'no-reply']);
const PRECEDENCES = new Set(['bulk', 'junk', 'list', 'auto_reply']);

export function classifyAutomatic(mail: ClassifyInput): AutomaticReason | null {
  const has = (name: string) => mail.header(name) !== undefined;
  if (mail.contentType === 'multipart/report' || mail.contentType === 'message/delivery-status') {
    return 'delivery_report';
  }
  if (mail.mailFrom === '') return 'null_sender';
  const autoSubmitted = mail.header('auto-submitted')?.trim().toLowerCase();
  if (autoSubmitted !== undefined && autoSubmitted !== '' && !autoSubmitted.startsWith('no')) {
    return 'auto_submitted';
  }
  if (has('x-autoreply') || has('x-autorespond')) return 'x_autoreply';
  const precedence = mail.header('precedence')?.trim().toLowerCase();
  if (precedence !== undefined && PRECEDENCES.has(precedence)) return 'precedence';
  if (has('list-id') || has('list-unsubscribe')) return 'mailing_list';
  if (has('x-loop')) return 'x_loop';
  const local = mail.from?.split('@')[0];
  if (local !== undefined && SYSTEM_LOCAL_PARTS.has(local)) return 'system_sender';
  return null;
}

/** An address the service never writes to: a system sender's (mailer-daemon@, postmaster@, noreply@, no-reply@). */
export const isSystemAddress = (address: string) =>
  SYSTEM_LOCAL_PARTS.has(address.trim().toLowerCase().split('@')[0] ?? '');

/** Automatic mail that reports a delivery: its outcome is `bounce` rather than `automatic`. */
export const isBounce = (reason: AutomaticReason | null) =>
  reason === 'delivery_report' || reason === 'null_sender';
