import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { slaBreachesWorker } from '#functions/workers.ts';
import { DeskpipeFunction } from './deskpipe-function.ts';

/**
 * The service-level breach runner deployed (docs/sla.md): one function, run every minute by a schedule rule for
 * most of the minute (functions/sla-breaches.ts), granted exactly its table actions and Query on the due index
 * (gsi2). Its errors and throttles are alarmed with every function's (ServiceAlarms); this adds an alarm for a
 * runner that stopped running (no invocation for 5 minutes: breaches would be late).
 */
export interface SlaBreachRunnerProps {
  table: TableV2;
  projectRoot: string;
  namePrefix: string;
  memorySize: number;
  logRetention: RetentionDays;
  reservedConcurrency: number;
  topic?: ITopic | undefined;
}

export class SlaBreachRunner extends Construct {
  readonly function: DeskpipeFunction;
  readonly notRunningAlarm: Alarm;

  constructor(scope: Construct, id: string, props: SlaBreachRunnerProps) {
    super(scope, id);
    this.function = new DeskpipeFunction(this, slaBreachesWorker.name, {
      entry: join(props.projectRoot, slaBreachesWorker.entry),
      projectRoot: props.projectRoot,
      namePrefix: props.namePrefix,
      memorySize: props.memorySize,
      logRetention: props.logRetention,
      timeout: Duration.seconds(slaBreachesWorker.timeoutSeconds),
      reservedConcurrentExecutions: props.reservedConcurrency,
    })
      .bindTable(props.table, slaBreachesWorker.tableActions)
      .bindIndexQueries(props.table, slaBreachesWorker.indexQueries);
    if (props.reservedConcurrency < 2) {
      throw new Error(
        'slaBreaches needs a reserved concurrency of 2 at least: a run overlaps the next one by its tail',
      );
    }
    new Rule(this, 'EveryMinute', {
      ruleName: `${props.namePrefix}-sla-breaches`,
      description:
        'Runs the service-level breach runner (functions/sla-breaches.ts) for most of each minute.',
      schedule: Schedule.rate(Duration.minutes(1)),
      // A run missed is made up by the next one, a minute later: no retries of the invocation.
      targets: [new LambdaFunction(this.function, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
    });
    this.notRunningAlarm = new Alarm(this, 'NotRunning', {
      alarmName: `${props.namePrefix}-sla-breaches-not-running`,
      metric: this.function.metricInvocations({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.BREACHING,
      alarmDescription:
        'The service-level breach runner did not run for 5 minutes: breaches are late. See docs/deploy.md#sla-breaches-not-running.',
    });
    if (props.topic) {
      const action = new SnsAction(props.topic);
      this.notRunningAlarm.addAlarmAction(action);
      this.notRunningAlarm.addOkAction(action);
    }
  }
}
