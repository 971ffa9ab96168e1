import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { emailInboundQueueWorker } from '#functions/workers.ts';
import { ATTACHMENTS_PREFIX, MAIL_BUCKET_VARIABLE, MAIL_COPIES_PREFIX } from '#lib/data/mail-store.ts';
import { INBOUND_QUEUE_VARIABLE } from '#lib/email/sqs-inbound-queue.ts';
import { suppressDeadLetterDestination, suppressMailObjectPrefixes } from '../nag-suppressions.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';
import { queueDepthAlarm } from './failed-mail.ts';
import { type WorkerFunctionProps, workerFunction } from './worker-function.ts';

/**
 * The inbound fair queue and its processing function (docs/email.md, "One account's share"). The inbound function
 * routes each mail SES hands it and queues one message per account, the account as its `MessageGroupId`: a standard
 * queue whose messages carry a group is an SQS fair queue, which hands the consumer the quiet accounts' messages
 * first once one account holds a disproportionate share of those in flight. The processing function takes batches
 * of it (an event source mapping, at most its reserved concurrency at once so no batch is throttled back), reports
 * only the mails whose store failed, and after INBOUND_QUEUE_MAX_RECEIVES receives a mail goes to the dead-letter
 * queue, whose alarm tells the operator (docs/deploy.md, "Email inbound queue failures").
 */

/**
 * Mails a batch: processed in turn, so a quiet account's mail taken in a batch waits for at most 4 others, and a
 * flooding account's in flight (20 batches × 5 = 100 at prod's concurrency) pass the fair queue's threshold of 30.
 */
export const INBOUND_QUEUE_BATCH = 5;
/** Receives of one mail before the dead-letter queue: a store failure is tried 5 times, 6 minutes apart. */
export const INBOUND_QUEUE_MAX_RECEIVES = 5;
/**
 * How long the oldest mail of the quiet accounts (every account but a flooding one) may wait before the operator is
 * told: past it, the processing function is short for everyone, not shared out by one account's flood.
 */
export const QUIET_WAIT_ALARM_SECONDS = 120;
/** AWS's advice for an SQS event source: the visibility timeout at least 6 × the function's timeout. */
export const INBOUND_QUEUE_VISIBILITY = Duration.seconds(6 * emailInboundQueueWorker.timeoutSeconds);

export interface InboundQueueProps extends WorkerFunctionProps {
  bucket: Bucket;
  topic?: ITopic | undefined;
}

export class InboundQueue extends Construct {
  readonly queue: Queue;
  readonly deadLetters: Queue;
  readonly deadLettersAlarm: Alarm;
  readonly quietWaitAlarm: Alarm;
  readonly function: DeskpipeFunction;

  constructor(scope: Construct, id: string, props: InboundQueueProps) {
    super(scope, id);
    this.deadLetters = new Queue(this, 'DeadLetters', {
      queueName: `${props.namePrefix}-email-inbound-queue-failures`,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    suppressDeadLetterDestination(
      this.deadLetters,
      "This queue is itself the dead-letter queue of the inbound fair queue; nothing consumes it to fail again, and an alarm watches its depth (an operator's redrive returns its mails to the inbound queue).",
    );
    this.queue = new Queue(this, 'Queue', {
      queueName: `${props.namePrefix}-email-inbound`,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: INBOUND_QUEUE_VISIBILITY,
      // As long as the failed-mail queue keeps an event: the mail bucket keeps the copies 30 days.
      retentionPeriod: Duration.days(14),
      deadLetterQueue: { queue: this.deadLetters, maxReceiveCount: INBOUND_QUEUE_MAX_RECEIVES },
    });
    this.function = processingFunction(this, props);
    this.function.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: INBOUND_QUEUE_BATCH,
        reportBatchItemFailures: true,
        // Never more pollers' invocations than the function may run: a throttled batch would count a receive.
        maxConcurrency: props.reservedConcurrency,
      }),
    );
    this.deadLettersAlarm = queueDepthAlarm(this, 'DeadLettersAlarm', this.deadLetters, {
      alarmName: `${props.namePrefix}-email-inbound-queue-failures`,
      description:
        'Received mail that the processing function could not process after its receives: its copy is kept in the mail bucket. See docs/deploy.md#email-inbound-queue-failures.',
      topic: props.topic,
    });
    this.quietWaitAlarm = quietWaitAlarm(this, this.queue, props);
  }

  /** Lets the inbound function queue routed mail: SendMessage (SendMessageBatch's permission) on this queue only. */
  grantSend(fn: DeskpipeFunction): void {
    fn.addEnvironment(INBOUND_QUEUE_VARIABLE, this.queue.queueUrl);
    fn.addToRolePolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }),
    );
  }
}

/**
 * The fair queue's own measure (SQS's `…InQuietGroups` metrics leave out the groups it finds noisy): the oldest
 * quiet account's mail waiting over QUIET_WAIT_ALARM_SECONDS. One account's flood alone never raises it.
 */
function quietWaitAlarm(scope: Construct, queue: Queue, props: InboundQueueProps): Alarm {
  const alarm = new Alarm(scope, 'QuietWaitAlarm', {
    alarmName: `${props.namePrefix}-email-inbound-quiet-wait`,
    metric: queue.metric('ApproximateAgeOfOldestMessageInQuietGroups', {
      period: Duration.minutes(5),
      statistic: 'Maximum',
    }),
    threshold: QUIET_WAIT_ALARM_SECONDS,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription:
      'Mail of accounts that are not flooding waits in the inbound queue: the processing function is short of concurrency, or failing. See docs/deploy.md#email-inbound-quiet-wait.',
  });
  if (props.topic) {
    const action = new SnsAction(props.topic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
  }
  return alarm;
}

/**
 * The processing function: its table grants, and on the bucket only what processing an account's copy needs: read
 * the copy (GetObject on `mail/`), write its attachments (multipart uploads, aborted when a stream fails); ListBucket
 * so a copy no longer there (its ticket purged meanwhile) is a 404, not a 403. It never reads SES's `raw/`.
 */
function processingFunction(scope: Construct, props: InboundQueueProps): DeskpipeFunction {
  const fn = workerFunction(scope, emailInboundQueueWorker, props);
  const { bucket } = props;
  fn.addEnvironment(MAIL_BUCKET_VARIABLE, bucket.bucketName);
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['s3:GetObject'],
      resources: [bucket.arnForObjects(`${MAIL_COPIES_PREFIX}*`)],
    }),
  );
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['s3:PutObject', 's3:AbortMultipartUpload'],
      resources: [bucket.arnForObjects(`${ATTACHMENTS_PREFIX}*`)],
    }),
  );
  suppressMailObjectPrefixes(bucket, fn, [MAIL_COPIES_PREFIX, ATTACHMENTS_PREFIX]);
  fn.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
  return fn;
}
