import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { suppressDeadLetterDestination } from '../nag-suppressions.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';

/**
 * Received mail the inbound function could not process (infra/constructs/mail-receiving.ts): after Lambda's own
 * retries its invocation lands in the failed-mail queue, whose alarm tells the operator; the mail is still in the
 * bucket and the queued event processes it again (docs/deploy.md, "Email inbound failures").
 */

/** Lambda's own retries of a failed asynchronous invocation (at most 2), then the queue. */
export const INBOUND_RETRY_ATTEMPTS = 2;
/** How long Lambda keeps trying an event before the queue (at most 6 hours). */
export const INBOUND_MAX_EVENT_AGE = Duration.hours(6);

/**
 * The inbound function's failed invocations: the queue they land in after Lambda's retries, and its alarm, made in
 * `scope` (the MailReceiving construct).
 */
export function failedMail(
  scope: Construct,
  fn: DeskpipeFunction,
  props: { namePrefix: string; topic?: ITopic | undefined },
): { queue: Queue; alarm: Alarm } {
  const queue = failedMailQueue(scope, props.namePrefix);
  fn.configureAsyncInvoke({
    retryAttempts: INBOUND_RETRY_ATTEMPTS,
    maxEventAge: INBOUND_MAX_EVENT_AGE,
    onFailure: new SqsDestination(queue),
  });
  return { queue, alarm: failedMailAlarm(scope, queue, props) };
}

/** The failed-mail queue: the inbound function's on-failure destination, after Lambda's own retries. */
function failedMailQueue(scope: Construct, namePrefix: string): Queue {
  const queue = new Queue(scope, 'FailedMail', {
    queueName: `${namePrefix}-email-inbound-failures`,
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  suppressDeadLetterDestination(
    queue,
    "This queue is itself the dead-letter destination (on-failure destination) of the inbound function's asynchronous invocations; nothing consumes it to fail again, and an alarm watches its depth.",
  );
  return queue;
}

/**
 * An alarm on a failure queue's depth: one message visible in 5 minutes, to the stage's topic (and back to OK)
 * when it has one. The failed-mail queue's and the webhook stream's failures (webhook-dispatcher.ts) use it.
 */
export function queueDepthAlarm(
  scope: Construct,
  id: string,
  queue: Queue,
  props: { alarmName: string; description: string; topic?: ITopic | undefined },
): Alarm {
  const alarm = new Alarm(scope, id, {
    alarmName: props.alarmName,
    metric: queue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(5),
      statistic: 'Maximum',
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription: props.description,
  });
  if (props.topic) {
    const action = new SnsAction(props.topic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
  }
  return alarm;
}

/** The alarm on the failed-mail queue's depth. */
const failedMailAlarm = (
  scope: Construct,
  queue: Queue,
  props: { namePrefix: string; topic?: ITopic | undefined },
): Alarm =>
  queueDepthAlarm(scope, 'FailedMailAlarm', queue, {
    alarmName: `${props.namePrefix}-email-inbound-failures`,
    description:
      'Received mail that the inbound function could not process after its retries: it is kept in the mail bucket. See docs/deploy.md#email-inbound-failures.',
    topic: props.topic,
  });
