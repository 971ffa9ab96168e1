import { type InboundRecord, putInbound } from '#lib/data/mail/inbound.ts';
import { rawCopyKey } from '#lib/data/mail-store.ts';
import { logMail } from '#lib/log.ts';
import type { MailStore, ReceivedMail } from '../receive.ts';
import { rejectedRecord } from './copy.ts';

/**
 * A kept mail over `maxBytes` (deployed: SES takes mail up to 40 MB), refused before it is read: logged `rejected`
 * for each account with its size (nothing of it is known: no sender, no subject), and removed, no copy made.
 * Answers each account's entry; none when the mail is within the limit (or no longer kept: its copies are).
 */
export async function refuseLarge(
  mail: ReceivedMail,
  accountIds: string[],
  store: MailStore,
  maxBytes: number,
): Promise<{ accountId: string; entry: InboundRecord }[]> {
  const size = await store.size(mail.rawKey);
  if (size === undefined || size <= maxBytes) return [];
  const refused = [];
  for (const accountId of accountIds) {
    const reason = `too_large: ${size} bytes, over the limit of ${maxBytes}`;
    const entry = { ...rejectedRecord(mail), reason, rawKey: rawCopyKey(accountId, mail.inboundId) };
    await putInbound(accountId, entry, undefined);
    logMail('mail received', { accountId, inboundId: mail.inboundId, outcome: entry.outcome });
    refused.push({ accountId, entry });
  }
  await store.remove(mail.rawKey);
  return refused;
}
