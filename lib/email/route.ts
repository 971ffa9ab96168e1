import { getInbound, type InboundRecord } from '#lib/data/mail/inbound.ts';
import { logMail } from '#lib/log.ts';
import { keepCopies } from './copies.ts';
import { refuseLarge } from './receive/too-large.ts';
import { accountsOf, type MailStore, type ReceivedMail } from './receive.ts';

/**
 * The first step of processing a kept mail (docs/email.md, "One account's share"): which accounts it is for, and
 * each one's own copy. receiveMail runs it and then each copy in place (`npm start`'s SMTP server has made the
 * copies already, so for it this step only finds them); deployed, the inbound function runs only this step and
 * queues each copy in its account's group of the inbound queue (lib/email/inbound-queue.ts), where the processing
 * function takes them by a fair share of the accounts.
 */
export interface RoutedMail {
  /** Each account's copy still to be processed (its own `rawKey` and recipients), by account. */
  copies: Map<string, ReceivedMail>;
  /** The accounts whose outcome is decided already: logged before (the mail processed again), or refused here. */
  decided: Map<string, InboundRecord>;
  /** Every account the mail is for, in the envelope's order. */
  accounts: string[];
}

/**
 * Routes a kept mail: its accounts (accountsOf), those already logged left as they are (a crash after the log
 * entry, an event delivered twice: the first outcome stands), a mail over `limits.maxBytes` refused before it is
 * read (deployed, where SES takes larger mail), and each other account's copy made (keepCopies: the delivery removed
 * once each has its own). Throws only when a store fails: nothing is lost, the caller tries the delivery again.
 */
export async function routeMail(
  mail: ReceivedMail,
  store: MailStore,
  limits: { maxBytes?: number } = {},
): Promise<RoutedMail> {
  const byAccount = await accountsOf(mail.recipients);
  const accounts = [...byAccount.keys()];
  if (accounts.length === 0) {
    logMail('mail for no account', { inboundId: mail.inboundId, recipients: mail.recipients.length });
    return { copies: new Map(), decided: new Map(), accounts };
  }
  const found = await Promise.all(accounts.map((accountId) => getInbound(accountId, mail.inboundId)));
  const decided = new Map<string, InboundRecord>();
  accounts.forEach((accountId, i) => {
    const entry = found[i];
    if (entry) decided.set(accountId, entry);
  });
  const waiting = new Map([...byAccount].filter(([accountId]) => !decided.has(accountId)));
  if (waiting.size > 0 && limits.maxBytes !== undefined) {
    for (const record of await refuseLarge(mail, [...waiting.keys()], store, limits.maxBytes)) {
      decided.set(record.accountId, record.entry);
      waiting.delete(record.accountId);
    }
  }
  const copies = waiting.size > 0 ? await keepCopies(mail, waiting, store) : new Map();
  return { copies, decided, accounts };
}
