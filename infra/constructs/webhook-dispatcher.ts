import { join } from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type WorkerDefinition, webhookDueWorker, webhookStreamWorker } from '#functions/workers.ts';
import { eventKeys } from '#lib/data/keys.ts';
import type { WorkerName } from '../config.ts';
import { suppressDeadLetterDestination } from '../nag-suppressions.ts';
import { DeskpipeFunction } from './deskpipe-function.ts';
import { queueDepthAlarm } from './failed-mail.ts';

/**
 * The webhook dispatcher deployed (docs/webhooks.md): the stream function, fed by the table's stream through an
 * event source mapping that passes it only new event items; the due function, run every minute as a pool of
 * `dueRunners` invocations (one schedule rule each, each handed its place, so each works its own due shards); and where stream
 * batches that could not be fanned out end up (an SQS queue, alarmed). Both functions reach receivers over the
 * internet (HTTPS) as every function outside a VPC does: nothing to open; the URL policy decides where to.
 */
export interface WebhookDispatcherProps {
  table: TableV2;
  projectRoot: string;
  namePrefix: string;
  memorySize: number;
  logRetention: RetentionDays;
  /** Reserved concurrency of each worker, by its name (infra/config.ts). */
  concurrency: Record<WorkerName, number>;
  /** The due runners' pool (infra/config.ts `webhookDueRunners`): one schedule rule each, with its place. */
  dueRunners: number;
  topic?: ITopic | undefined;
}

/** Attempts of a failing stream batch (halved each time by bisection) before it goes to the queue. */
export const STREAM_RETRY_ATTEMPTS = 10;
/** A stream record older than this goes to the queue unprocessed (the stream keeps records 24 hours). */
export const STREAM_MAX_RECORD_AGE = Duration.hours(6);

export class WebhookDispatcher extends Construct {
  readonly streamFunction: DeskpipeFunction;
  readonly dueFunction: DeskpipeFunction;
  /** Where the stream's failed batches are described (shard and sequence range) once their retries are spent. */
  readonly streamFailures: Queue;
  readonly streamFailuresAlarm: Alarm;

  constructor(scope: Construct, id: string, props: WebhookDispatcherProps) {
    super(scope, id);
    const { table, namePrefix } = props;
    const worker = (definition: WorkerDefinition & { name: WorkerName }) =>
      new DeskpipeFunction(this, definition.name, {
        entry: join(props.projectRoot, definition.entry),
        projectRoot: props.projectRoot,
        namePrefix,
        memorySize: props.memorySize,
        logRetention: props.logRetention,
        timeout: Duration.seconds(definition.timeoutSeconds),
        reservedConcurrentExecutions: props.concurrency[definition.name],
      })
        .bindTable(table, definition.tableActions)
        .bindIndexQueries(table, definition.indexQueries);

    this.streamFailures = new Queue(this, 'StreamFailures', {
      queueName: `${namePrefix}-webhooks-stream-failures`,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
      removalPolicy: RemovalPolicy.DESTROY,
    });
    suppressDeadLetterDestination(this.streamFailures);

    this.streamFunction = worker(webhookStreamWorker);
    // The event source grants the stream's read (DescribeStream, GetRecords, GetShardIterator, ListStreams).
    this.streamFunction.addEventSource(
      new DynamoEventSource(table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        bisectBatchOnError: true,
        reportBatchItemFailures: true,
        retryAttempts: STREAM_RETRY_ATTEMPTS,
        maxRecordAge: STREAM_MAX_RECORD_AGE,
        onFailure: new SqsDlq(this.streamFailures),
        // Only events are fanned out: every other write of the table never invokes the function.
        filters: [
          FilterCriteria.filter({
            eventName: FilterRule.isEqual('INSERT'),
            dynamodb: { NewImage: { type: { S: FilterRule.isEqual(eventKeys.itemType.event) } } },
          }),
        ],
      }),
    );

    this.dueFunction = worker(webhookDueWorker);
    if (props.concurrency.webhooksDue < 2 * props.dueRunners) {
      throw new Error(
        `webhooksDue's reserved concurrency (${props.concurrency.webhooksDue}) must be at least twice the due runners (${props.dueRunners}): a run's tail overlaps the next one's start`,
      );
    }
    // The worker pool: runner i of n works the due shards i, i + n, … (lib/data/webhooks/due-shards.ts, shardsOfRunner).
    for (let runner = 0; runner < props.dueRunners; runner++) {
      new Rule(this, runner === 0 ? 'DueEveryMinute' : `DueEveryMinute${runner}`, {
        ruleName: `${namePrefix}-webhooks-due${runner === 0 ? '' : `-${runner}`}`,
        description: `Runs webhook due runner ${runner} of ${props.dueRunners} (functions/webhooks-due.ts) for most of each minute.`,
        schedule: Schedule.rate(Duration.minutes(1)),
        // A run missed is made up by the next one, a minute later: no retries of the invocation.
        targets: [
          new LambdaFunction(this.dueFunction, {
            event: RuleTargetInput.fromObject({ runner, runners: props.dueRunners }),
            retryAttempts: 0,
            maxEventAge: Duration.minutes(1),
          }),
        ],
      });
    }

    this.streamFailuresAlarm = queueDepthAlarm(this, 'StreamFailuresAlarm', this.streamFailures, {
      alarmName: `${namePrefix}-webhooks-stream-failures`,
      description:
        'Stream records that were never fanned out to webhook endpoints. See docs/deploy.md#webhook-stream-failures.',
      topic: props.topic,
    });
  }
}
