import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mailStore } from '#lib/data/mail-store.ts';
import { processQueuedMail } from '#lib/email/inbound-queue.ts';
import { workerHandler } from '#lib/log.ts';

/**
 * The processing function (docs/email.md, "One account's share"): a batch of the inbound fair queue, each
 * account's copy of a received mail handed to the one inbound handler with the S3 store (lib/email/inbound-queue.ts).
 * The messages whose store failed are reported back (ReportBatchItemFailures): only they return to the queue, to
 * be received again after the visibility timeout; after INBOUND_QUEUE_MAX_RECEIVES the queue moves one to its
 * dead-letter queue, whose alarm tells the operator (infra/constructs/inbound-queue.ts).
 */
export const handler = workerHandler('email inbound queue', async (event: SQSEvent, context?: Context) => {
  const result = await processQueuedMail(
    event.Records.map((r) => ({ messageId: r.messageId, body: r.body })),
    mailStore(),
    () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY,
  );
  const answer: SQSBatchResponse = {
    batchItemFailures: result.failed.map((itemIdentifier) => ({ itemIdentifier })),
  };
  const figures = {
    messages: event.Records.length,
    outcomes: result.records.length,
    failed: result.failed.length,
  };
  return { answer, figures };
});
