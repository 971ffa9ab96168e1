import type { SESEvent, SNSEvent } from 'aws-lambda';
import { mailStore } from '#lib/data/mail-store.ts';
import { receiveSesFeedbackEvent } from '#lib/email/ses-feedback.ts';
import { receiveSesEvent } from '#lib/email/ses-receipt.ts';
import { workerHandler } from '#lib/log.ts';

/**
 * The inbound function (docs/email.md): what SES hands back about mail.
 * - Mail received: invoked asynchronously by the stage's SES receipt rule once the raw mail is in the mail bucket
 *   (infra/constructs/mail-receiving.ts), it runs the one inbound handler (lib/email/receive.ts) with the S3 store
 *   (MAIL_BUCKET): each account's copy of SES's object made (CopyObject), SES's object removed, each copy processed
 *   (SES's spam and virus verdicts with it; over 25 MiB, refused). A failure (the table or the bucket unreachable) throws: Lambda tries the event twice more, then
 *   sends it to the failed-mail queue, whose alarm tells the operator (docs/deploy.md).
 * - Bounces and complaints of mail sent: the outbox's configuration set publishes them to the feedback topic
 *   (infra/constructs/email-outbox.ts), which invokes it with SNS records (lib/email/ses-feedback.ts). A failure
 *   throws: SNS retries the delivery, and a notification handled twice changes nothing.
 */
export const handler = workerHandler('email inbound', async (event: SESEvent | SNSEvent) => {
  const records = event.Records ?? [];
  if (records.some((r) => 'Sns' in r)) {
    return { answer: undefined, figures: await receiveSesFeedbackEvent(event as SNSEvent) };
  }
  const outcomes = await receiveSesEvent(event as SESEvent, mailStore());
  const figures: Record<string, number> = { mails: records.length, outcomes: outcomes.length };
  return { answer: undefined, figures };
});
