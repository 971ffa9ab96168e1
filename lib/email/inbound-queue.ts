import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import { logMail } from '#lib/log.ts';
import { type MailStore, type ReceivedMail, receiveMail } from './receive.ts';

/**
 * The deployed inbound queue (docs/email.md, "One account's share"): the inbound function routes each mail SES
 * hands it (lib/email/ses-receipt.ts: its accounts found, each one's copy made) and queues one message per account,
 * in that account's message group of an SQS fair queue; the processing function takes them in batches
 * (functions/email-inbound-queue.ts) and hands each to the one inbound handler (receiveMail), as `npm start`'s
 * local queue hands it each account's copy (infra/local/mail-queue.ts, FairQueue). A message is the copy's
 * ReceivedMail as JSON: its key, envelope, SES's verdicts; never the mail itself (up to 25 MiB, a message 1 MiB).
 */

/** One account's copy of a received mail, queued in that account's group. */
export interface QueuedMail {
  accountId: string;
  mail: ReceivedMail;
}

/** Where routed mail is queued: the SQS fair queue deployed (lib/email/sqs-inbound-queue.ts). */
export interface InboundQueue {
  /** Queues every copy, or throws (none is lost: the caller routes the mail again, and routing is idempotent). */
  send(mails: readonly QueuedMail[]): Promise<void>;
}

/** Time a message may take at most: one of 25 MiB, ~12 s (docs/email.md), with room. */
export const QUEUED_MAIL_TIME_MS = 15_000;

/** A message of the queue as the event source mapping hands it over. */
export interface QueueMessage {
  messageId: string;
  body: string;
}

/**
 * A batch of the queue, each message processed in turn (one account's mails in a batch meet one ticket path;
 * in turn they never race each other there). A store failure leaves its message to be received again (reported in
 * `failed`, so the event source mapping returns only it to the queue: ReportBatchItemFailures) and the rest goes
 * on; a message that is no mail (it cannot be processed, now or later) is logged and taken off the queue.
 */
export async function processQueuedMail(
  messages: readonly QueueMessage[],
  store: MailStore,
  /** The function's time left (ms): a message is begun only with QUEUED_MAIL_TIME_MS of it left. */
  timeLeftMs: () => number = () => Number.POSITIVE_INFINITY,
): Promise<{ failed: string[]; records: InboundRecord[] }> {
  const failed: string[] = [];
  const records: InboundRecord[] = [];
  for (const [i, message] of messages.entries()) {
    // Too little time for one more (a 25 MiB mail takes ~12 s): the rest go back to the queue, reported as not
    // done, instead of the whole batch back at the function's timeout (and toward the dead-letter queue).
    if (timeLeftMs() < QUEUED_MAIL_TIME_MS) {
      failed.push(...messages.slice(i).map((m) => m.messageId));
      break;
    }
    const mail = queuedMailOf(message.body);
    if (!mail) {
      logMail('queued mail unreadable', { queueMessageId: message.messageId });
      continue;
    }
    try {
      records.push(...(await receiveMail(mail, store)));
    } catch (error) {
      logMail('queued mail failed', {
        inboundId: mail.inboundId,
        // Its name only: a store's message may quote what it held.
        error: error instanceof Error ? error.name : 'unknown',
      });
      failed.push(message.messageId);
    }
  }
  return { failed, records };
}

/** The message body of one account's copy. */
export const queuedMailBody = (mail: ReceivedMail): string => JSON.stringify(mail);

/** The copy a message names, or undefined when the body is not one (nothing written by the inbound function). */
export function queuedMailOf(body: string): ReceivedMail | undefined {
  try {
    const mail = JSON.parse(body) as Partial<ReceivedMail> | null;
    const fields = mail && typeof mail.inboundId === 'string' && typeof mail.rawKey === 'string';
    return fields && Array.isArray(mail.recipients) ? (mail as ReceivedMail) : undefined;
  } catch {
    return undefined;
  }
}
