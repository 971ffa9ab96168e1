import { createHash } from 'node:crypto';
import type { SESEvent, SESEventRecord } from 'aws-lambda';
import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import { RAW_MAIL_PREFIX } from '#lib/data/mail-store.ts';
import { formatTimestamp, nowMillis } from '#lib/time.ts';
import { sesAuthentication } from './authentication.ts';
import type { InboundQueue } from './inbound-queue.ts';
import { MAX_MAIL_BYTES, type MailStore, type ReceivedMail } from './receive.ts';
import { routeMail } from './route.ts';

/**
 * Receiving deployed (docs/email.md, "One code path, two worlds"): the stage's SES receipt rule keeps the raw
 * mail in the mail bucket (its S3 action, `raw/<SES message id>`), then invokes the inbound function with the
 * mail's envelope (its Lambda action, asynchronously). Each record becomes the ReceivedMail that `npm start`'s SMTP
 * server makes for a mail it kept; its accounts' copies are made here and queued, and the processing function
 * hands each to the same handler (receiveMail) with the S3 store, as `npm start`'s queue hands it each copy.
 */

/**
 * The inbound id of an SES mail: its receipt time and a hash of SES's message id, so the same mail delivered again
 * (Lambda retries an asynchronous invocation that failed) has the same id, and its first outcome stands.
 */
export function inboundIdOf(record: SESEventRecord): string {
  const ms = Date.parse(record.ses.mail.timestamp);
  const tail = createHash('sha256').update(record.ses.mail.messageId).digest('hex').slice(0, 12);
  return `in_${String(Number.isFinite(ms) ? ms : 0).padStart(13, '0')}${tail}`;
}

/**
 * The kept mail an SES record names: its object in the bucket, its envelope (recipients the rule accepted), and
 * SES's authentication verdicts.
 */
export function receivedMailOf(record: SESEventRecord): ReceivedMail {
  const { mail, receipt } = record.ses;
  const ms = Date.parse(mail.timestamp);
  return {
    inboundId: inboundIdOf(record),
    rawKey: `${RAW_MAIL_PREFIX}${mail.messageId}`,
    receivedAt: formatTimestamp((Number.isFinite(ms) ? ms : nowMillis()) * 1000),
    // SES reports the null sender (`MAIL FROM:<>`) as an empty source.
    mailFrom: (mail.source ?? '').trim().toLowerCase(),
    recipients: receipt.recipients.map((r) => r.trim().toLowerCase()),
    // SES's SPF, DKIM and DMARC verdicts: deployed, never a header of the mail (any sender can write one).
    authentication: sesAuthentication(receipt),
    // The rule's scan (`scanEnabled`): acted on by receiveMail (a virus keeps the attachments out of reach).
    verdicts: { spam: receipt.spamVerdict?.status, virus: receipt.virusVerdict?.status },
  };
}

/**
 * Every record of an SES event routed, one after the other (docs/email.md, "One account's share"): its accounts
 * found, each one's copy made (SES's object removed), and each copy queued in its account's group of the inbound
 * queue, where the processing function takes it (lib/email/inbound-queue.ts). A store or queue failure throws
 * (Lambda retries the invocation: routing again makes no copy twice, queues what is not logged yet, and a copy
 * queued twice is processed once, by its log entry and Message-ID claim); bad mail never throws. SES takes mail
 * larger than the contract's 25 MiB: such a kept object is refused here, before it is copied or parsed
 * (`rejected`). Answers the outcomes decided here (refused, or logged before) and how many copies were queued.
 */
export async function receiveSesEvent(
  event: SESEvent,
  store: MailStore,
  queue: InboundQueue,
): Promise<{ decided: InboundRecord[]; queued: number }> {
  const decided: InboundRecord[] = [];
  let queued = 0;
  for (const record of event.Records ?? []) {
    const routed = await routeMail(receivedMailOf(record), store, { maxBytes: MAX_MAIL_BYTES });
    decided.push(...routed.decided.values());
    const mails = [...routed.copies].map(([accountId, mail]) => ({ accountId, mail }));
    if (mails.length > 0) await queue.send(mails);
    queued += mails.length;
  }
  return { decided, queued };
}
