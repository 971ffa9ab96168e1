import { findAccountIdByAddress } from '#lib/data/mail/addresses.ts';
import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import type { MailObjectStore } from '#lib/data/mail-store.ts';
import { splitAddress } from './addresses.ts';
import type { MailAuthentication } from './authentication.ts';
import { receiveCopy } from './receive/copy.ts';
import { routeMail } from './route.ts';

export { splitAddress } from './addresses.ts';
export { INBOUND_ID_PATTERN, INBOUND_OUTCOMES, type InboundOutcome, newInboundId } from './outcomes.ts';

/**
 * The one inbound handler (docs/email.md): raw mail bytes in, an outcome per account out. It knows nothing of
 * SMTP, SES, SQS or S3: `npm start`'s SMTP server (infra/local/mail.ts) keeps each account's copy and its queue
 * (infra/local/mail-queue.ts) calls receiveMail with it; deployed, the inbound function (functions/email-inbound.ts)
 * runs its first step only (routeMail, route.ts: each account's copy made) and queues each copy, and the processing
 * function (functions/email-inbound-queue.ts) calls receiveMail with it: the same ReceivedMail in both worlds.
 *
 * One concern a file under lib/email/receive/: one account's copy read and its entry logged (copy.ts), or a mail
 * over the limit refused unread (too-large.ts); its outcome decided (deliver.ts) from the kind of automatic mail
 * (automatic.ts), the Message-ID's claim (claim.ts) and the threading rules (thread.ts); the message it becomes on
 * a ticket (existing-ticket.ts) or the ticket it opens (new-ticket.ts), with its mail's fields (mail-fields.ts);
 * the outcome of a refused commit (refusals.ts); what the steps share (decision.ts).
 */

/** Where raw mail and attachments are kept: a folder locally, S3 deployed (lib/data/mail-store.ts). */
export type MailStore = Pick<MailObjectStore, 'openRaw' | 'putAttachment' | 'size' | 'copy' | 'remove'>;

/** The contract's size limit of a mail (decisions.md): 25 MiB. */
export const MAX_MAIL_BYTES = 26_214_400;

/** A mail as it was received: kept before anything else (the SMTP 250, or SES's S3 object). */
export interface ReceivedMail {
  /** Time-ordered id (newInboundId): the inbound log's key, the same when the mail is processed again. */
  inboundId: string;
  rawKey: string;
  receivedAt: string;
  /** The envelope sender: '' for the null sender (`MAIL FROM:<>`); undefined when unknown. */
  mailFrom: string | undefined;
  /** The envelope recipients (RCPT TO), as given. */
  recipients: string[];
  /** SPF, DKIM and DMARC as the receiving edge judged them: deployed, SES's verdicts (ses-receipt.ts). */
  authentication?: MailAuthentication | undefined;
  /**
   * Locally, the authserv-id whose `Authentication-Results` header is believed (infra/local/mail.ts,
   * `SMTP_AUTHSERV_ID`); without it or `authentication`, every result is `none`.
   */
  authservId?: string | undefined;
  /** SES's scan of the mail (deployed: the receipt's spamVerdict and virusVerdict statuses); absent locally. */
  verdicts?: { spam?: string | undefined; virus?: string | undefined } | undefined;
}

/** The accounts a mail's envelope recipients belong to (each address's owner, one GetItem per distinct base). */
export async function accountsOf(recipients: string[]): Promise<Map<string, string[]>> {
  const byAccount = new Map<string, string[]>();
  const bases = [...new Set(recipients.map((r) => splitAddress(r).base))];
  const owners = await Promise.all(bases.map((b) => findAccountIdByAddress(b)));
  for (const recipient of recipients) {
    const owner = owners[bases.indexOf(splitAddress(recipient).base)];
    if (!owner) continue;
    byAccount.set(owner, [...(byAccount.get(owner) ?? []), recipient.trim().toLowerCase()]);
  }
  return byAccount;
}

/**
 * Processes a kept mail: each account it was sent to gets its own copy (lib/email/copies.ts), then each copy is
 * parsed (its attachments kept beside it, the account's own), and its outcome decided, written and logged.
 * Processing the same kept mail again (a crash after the 250, an S3 event delivered twice) changes nothing: an
 * account's log entry, keyed by the mail's inbound id, is its first outcome, and the Message-ID claim makes it one
 * message. Never throws for bad mail: a mail that cannot be parsed is logged `rejected`, and so is one over
 * `limits.maxBytes` (deployed, where SES takes larger mail: refused before it is parsed). Throws only when a store
 * fails (the caller retries the kept mail later).
 */
export async function receiveMail(
  mail: ReceivedMail,
  store: MailStore,
  limits: { maxBytes?: number } = {},
): Promise<InboundRecord[]> {
  const { copies, decided, accounts } = await routeMail(mail, store, limits);
  const records: InboundRecord[] = [];
  for (const accountId of accounts) {
    const copy = copies.get(accountId);
    records.push(
      copy ? await receiveCopy(accountId, copy, store) : (decided.get(accountId) as InboundRecord),
    );
  }
  return records;
}
