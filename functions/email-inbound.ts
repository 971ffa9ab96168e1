import type { SESEvent } from 'aws-lambda';
import { mailStore } from '#lib/data/mail-store.ts';
import { receiveSesEvent } from '#lib/email/ses-receipt.ts';
import { workerHandler } from '#lib/log.ts';

/**
 * The inbound function (docs/email.md): invoked asynchronously by the stage's SES receipt rule once the raw mail is
 * in the mail bucket (infra/constructs/mail-receiving.ts), it runs the one inbound handler (lib/email/receive.ts)
 * with the S3 store (MAIL_BUCKET). A failure (the table or the bucket unreachable) throws: Lambda tries the event
 * twice more, then sends it to the failed-mail queue, whose alarm tells the operator (docs/deploy.md).
 */
export const handler = workerHandler('email inbound', async (event: SESEvent) => {
  const outcomes = await receiveSesEvent(event, mailStore());
  return { answer: undefined, figures: { mails: event.Records?.length ?? 0, outcomes: outcomes.length } };
});
