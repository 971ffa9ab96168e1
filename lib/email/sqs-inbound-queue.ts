import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type InboundQueue, type QueuedMail, queuedMailBody } from './inbound-queue.ts';

/**
 * The inbound queue deployed (docs/email.md, "One account's share"): a standard SQS queue whose every message
 * carries its account as `MessageGroupId`, which makes it an SQS fair queue: when one account has a disproportionate
 * share of the messages in flight, SQS hands the processing function the other accounts' messages first, so their
 * dwell time stays low while the flood drains. The queue's URL is the inbound function's INBOUND_QUEUE_URL
 * (infra/constructs/mail-receiving.ts).
 */

/** The inbound function's variable naming the queue (set by infra/constructs/mail-receiving.ts). */
export const INBOUND_QUEUE_VARIABLE = 'INBOUND_QUEUE_URL';

/** SendMessageBatch takes at most 10 entries. */
const BATCH_ENTRIES = 10;

let shared: { client: SQSClient; for: string } | undefined;

/**
 * One client for the function's life (its connections kept warm), made when first used; made again if the
 * environment it was made from (the SQS endpoint, the region) has changed, as in a test process whose files each
 * run their own local queue.
 */
function sharedClient(): SQSClient {
  const environment = `${process.env.AWS_ENDPOINT_URL_SQS ?? ''} ${process.env.AWS_REGION ?? ''}`;
  if (shared?.for !== environment) shared = { client: new SQSClient({}), for: environment };
  return shared.client;
}

/** The queue the environment names. */
export function sqsInboundQueue(
  queueUrl = process.env[INBOUND_QUEUE_VARIABLE],
  client: SQSClient = sharedClient(),
): InboundQueue {
  if (!queueUrl) throw new Error(`${INBOUND_QUEUE_VARIABLE} is not set`);
  return {
    async send(mails: readonly QueuedMail[]): Promise<void> {
      for (let start = 0; start < mails.length; start += BATCH_ENTRIES) {
        const entries = mails.slice(start, start + BATCH_ENTRIES).map(({ accountId, mail }, i) => ({
          Id: String(start + i),
          MessageBody: queuedMailBody(mail),
          // The account is the tenant of the fair queue (never the inbound id: one mail's group would be no share).
          MessageGroupId: accountId,
        }));
        const answer = await client.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
        );
        // A batch answers each entry: one not taken fails the routing, which is tried again whole.
        if (answer.Failed?.length) {
          const [first] = answer.Failed;
          throw new Error(`inbound queue refused ${answer.Failed.length} message(s): ${first?.Code}`);
        }
      }
    },
  };
}
