import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { WorkerDefinition } from '#functions/workers.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';
import { type WorkerFunctionProps, workerFunction } from './worker-function.ts';

/**
 * A background runner deployed on a schedule: one function (a worker of functions/workers.ts), run every
 * `everyMinutes` by a schedule rule, granted exactly its table actions and Query on its indexes. Its errors and
 * throttles are alarmed with every function's (ServiceAlarms); this adds an alarm for a runner that stopped running
 * (no invocation over `notRunningAfter`). The service-level breach runner (docs/sla.md) and the trash's purge
 * (docs/deploy.md) are two declarations of it. Its `reservedConcurrency` is at least 2: a run may overlap the next
 * one by its tail.
 */
export interface ScheduledRunnerProps extends WorkerFunctionProps {
  worker: WorkerDefinition;
  /** What runs, for the rule's description. */
  description: string;
  /** `<namePrefix>-<slug>` names the rule, `<namePrefix>-<slug>-not-running` the alarm. */
  slug: string;
  everyMinutes: number;
  /** The rule's construct id ('Schedule'): a runner deployed before keeps its rule's, so no rename replaces it. */
  ruleId?: string;
  /** No invocation for this long raises the not-running alarm (a multiple of 5 minutes, at least everyMinutes). */
  notRunningAfter: Duration;
  /** The not-running alarm's description: what is late, and the runbook's anchor. */
  notRunningMeans: string;
  topic?: ITopic | undefined;
}

export class ScheduledRunner extends Construct {
  readonly function: DeskpipeFunction;
  readonly notRunningAlarm: Alarm;

  constructor(scope: Construct, id: string, props: ScheduledRunnerProps) {
    super(scope, id);
    const { worker } = props;
    if (props.reservedConcurrency < 2) {
      throw new Error(
        `${worker.name} needs a reserved concurrency of 2 at least: a run overlaps the next one by its tail`,
      );
    }
    this.function = workerFunction(this, worker, props);
    const every = Duration.minutes(props.everyMinutes);
    new Rule(this, props.ruleId ?? 'Schedule', {
      ruleName: `${props.namePrefix}-${props.slug}`,
      description: props.description,
      schedule: Schedule.rate(every),
      // A run missed is made up by the next one: no retries of the invocation.
      targets: [new LambdaFunction(this.function, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
    });
    this.notRunningAlarm = new Alarm(this, 'NotRunning', {
      alarmName: `${props.namePrefix}-${props.slug}-not-running`,
      metric: this.function.metricInvocations({ period: props.notRunningAfter, statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.BREACHING,
      alarmDescription: props.notRunningMeans,
    });
    if (props.topic) {
      const action = new SnsAction(props.topic);
      this.notRunningAlarm.addAlarmAction(action);
      this.notRunningAlarm.addOkAction(action);
    }
  }
}
