import type { SESEvent, SNSEvent } from 'aws-lambda';
import { mailStore } from '#lib/data/mail-store.ts';
import { receiveSesFeedbackEvent } from '#lib/email/ses-feedback.ts';
import { receiveSesEvent } from '#lib/email/ses-receipt.ts';
import { sqsInboundQueue } from '#lib/email/sqs-inbound-queue.ts';
import { workerHandler } from '#lib/log.ts';

/**
 * The inbound function (docs/email.md): what SES hands back about mail.
 * - Mail received: invoked asynchronously by the stage's SES receipt rule once the raw mail is in the mail bucket
 *   (infra/constructs/mail-receiving.ts), it routes each mail (lib/email/ses-receipt.ts): its accounts found, each
 *   one's copy made (CopyObject) and SES's object removed, a mail over 25 MiB refused, and each copy queued in its
 *   account's group of the inbound fair queue (INBOUND_QUEUE_URL), which the processing function consumes
 *   (functions/email-inbound-queue.ts). A failure (the table, the bucket or the queue unreachable) throws: Lambda
 *   tries the event twice more, then sends it to the failed-mail queue, whose alarm tells the operator
 *   (docs/deploy.md).
 * - Bounces and complaints of mail sent: the outbox's configuration set publishes them to the feedback topic
 *   (infra/constructs/email-outbox.ts), which invokes it with SNS records (lib/email/ses-feedback.ts). A failure
 *   throws: SNS retries the delivery, and a notification handled twice changes nothing.
 */
export const handler = workerHandler('email inbound', async (event: SESEvent | SNSEvent) => {
  const records = event.Records ?? [];
  if (records.some((r) => 'Sns' in r)) {
    return { answer: undefined, figures: await receiveSesFeedbackEvent(event as SNSEvent) };
  }
  const routed = await receiveSesEvent(event as SESEvent, mailStore(), sqsInboundQueue());
  const figures = { mails: records.length, queued: routed.queued, decided: routed.decided.length };
  return { answer: undefined, figures };
});
