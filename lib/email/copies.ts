import { MAIL_COPIES_PREFIX, type MailObjectStore, rawCopyKey } from '#lib/data/mail-store.ts';
import type { ReceivedMail } from './receive.ts';

/**
 * One delivery to several accounts is several mails (decisions.md, "The e-mail channel"): each account gets its own
 * copy of the raw mail (`mail/<account>/<inbound id>.eml`), then its own attachments as its copy is parsed, so an
 * erasure, a deletion or a purge in one account rewrites or removes only that account's files. The delivery as the
 * receiver kept it (SES's `raw/<message id>`, the SMTP server's incoming file) holds every account's mail: it is
 * removed as soon as each has its copy. `npm start`'s SMTP server makes the copies before its 250; deployed, the
 * inbound function makes them first thing (S3 CopyObject: server-side, never the mail in memory), in the same code.
 */

/** What copying needs of the mail store (lib/data/mail-store.ts). */
export type CopyStore = Pick<MailObjectStore, 'size' | 'copy' | 'remove'>;

/** A key of an account's copy (anything else is a delivery as its receiver kept it). */
export const isAccountCopy = (rawKey: string) => rawKey.startsWith(MAIL_COPIES_PREFIX);

/**
 * Each account's copy of the mail (`accounts`: each account and its recipients of the envelope, as accountsOf answers
 * them), made unless it is kept already, then the delivery removed; answers each account's mail, its copy's key and
 * its own recipients. A copy kept already is never made again (the same delivery processed again after a crash, or
 * an account's own copy handed in): one its account erased stays erased. A failure removes the copies this call
 * made and throws, the delivery still kept: the caller tries it again whole (the SMTP server answers 451).
 */
export async function keepCopies(
  mail: ReceivedMail,
  accounts: ReadonlyMap<string, string[]>,
  store: CopyStore,
): Promise<Map<string, ReceivedMail>> {
  const copies = new Map<string, ReceivedMail>();
  const made: string[] = [];
  try {
    for (const [accountId, recipients] of accounts) {
      const rawKey = rawCopyKey(accountId, mail.inboundId);
      if (rawKey !== mail.rawKey && (await store.size(rawKey)) === undefined) {
        await store.copy(mail.rawKey, rawKey);
        made.push(rawKey);
      }
      copies.set(accountId, { ...mail, rawKey, recipients });
    }
  } catch (error) {
    await Promise.allSettled(made.map((key) => store.remove(key)));
    throw error;
  }
  if (!isAccountCopy(mail.rawKey)) await store.remove(mail.rawKey);
  return copies;
}
