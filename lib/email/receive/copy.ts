import type { Readable } from 'node:stream';
import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import { type InboundRecord, putInbound } from '#lib/data/mail/inbound.ts';
import { attachmentKey } from '#lib/data/mail-store.ts';
import { addressHash, personRefAddresses } from '#lib/erasures/address-hash.ts';
import { logMail } from '#lib/log.ts';
import { type ParsedMail, parseMail } from '../parse.ts';
import type { MailStore, ReceivedMail } from '../receive.ts';
import { deliver } from './deliver.ts';

/** One account's copy of a received mail (docs/email.md): read, its outcome decided, and its log entry written. */
export async function receiveCopy(
  accountId: string,
  mail: ReceivedMail,
  store: MailStore,
): Promise<InboundRecord> {
  let parsed: ParsedMail | undefined;
  let parseError: string | undefined;
  // A failure of where mail is kept (not of the mail): thrown, so the caller tries the kept mail again later.
  let storeFailure: unknown;
  // A mail SES found a virus in keeps no attachment: each is counted and listed, never kept (docs/email.md).
  const withheld = mail.verdicts?.virus === 'FAIL';
  try {
    const raw = store.openRaw(mail.rawKey);
    raw.on('error', (error) => {
      storeFailure ??= error;
    });
    parsed = await parseMail(raw, (id, content) =>
      withheld
        ? countBytes(content)
        : store
            .putAttachment(attachmentKey(accountId, mail.inboundId, id), content)
            .catch((error: unknown) => {
              storeFailure ??= error;
              throw error;
            }),
    );
  } catch (error) {
    if (storeFailure) throw storeFailure;
    parseError = error instanceof Error ? error.message.slice(0, 200) : 'unreadable';
  }
  const base: InboundRecord = {
    ...rejectedRecord(mail),
    headerMessageId: parsed?.messageId?.slice(0, 998) ?? null,
    from: parsed?.from?.email ?? null,
    subject: parsed ? parsed.subject || null : null,
  };
  const decided: InboundRecord = parsed
    ? { ...base, ...(await deliver(accountId, mail.recipients, parsed, mail)) }
    : { ...base, reason: `unparseable: ${parseError}` };
  await putInbound(accountId, decided, await senderRef(accountId, decided));
  logMail('mail received', { accountId, inboundId: mail.inboundId, outcome: decided.outcome });
  return decided;
}

/** A log entry of the mail, `rejected`, naming nothing of it yet. */
export const rejectedRecord = (mail: ReceivedMail): InboundRecord => ({
  id: mail.inboundId,
  receivedAt: mail.receivedAt,
  headerMessageId: null,
  from: null,
  subject: null,
  outcome: 'rejected',
  reason: null,
  ticketUuid: null,
  messageId: null,
  rawKey: mail.rawKey,
});

/** An attachment's bytes read and dropped; answers how many. */
async function countBytes(content: Readable): Promise<number> {
  let size = 0;
  for await (const chunk of content) size += (chunk as Buffer).length;
  return size;
}

/**
 * The person reference of a log entry (decisions.md, "Erasing a person"): a mail that became no ticket (refused,
 * automatic, suppressed…) is found by its sender's erasure through the entry itself; none for the account's own
 * addresses.
 */
async function senderRef(accountId: string, entry: InboundRecord): Promise<string | undefined> {
  if (entry.ticketUuid || !entry.from) return undefined;
  const own = (await getCachedAccountConfig(accountId))?.account.email?.addresses ?? [];
  const [sender] = personRefAddresses([entry.from], own);
  return sender && addressHash(accountId, sender);
}
