import { join } from 'node:path';
import { Duration, Stack } from 'aws-cdk-lib';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { ConfigurationSet } from 'aws-cdk-lib/aws-ses';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { emailOutboxWorker } from '#functions/workers.ts';
import { DeskpipeFunction } from './deskpipe-function.ts';

/**
 * The outbox deployed (docs/email.md, "Sending"): one function, run every minute by a schedule rule for most of
 * the minute (functions/email-outbox.ts), granted exactly its table actions, Query on the due index (gsi2), and
 * SES sending with the stage's configuration set only. The configuration set is here so that every mail is sent
 * with one; its event destinations (bounces and complaints back to the service) are not wired yet (docs/email.md,
 * "Not done"). Its errors and throttles are alarmed with every function's (ServiceAlarms).
 */
export interface EmailOutboxProps {
  table: TableV2;
  projectRoot: string;
  namePrefix: string;
  memorySize: number;
  logRetention: RetentionDays;
  reservedConcurrency: number;
}

export class EmailOutbox extends Construct {
  readonly function: DeskpipeFunction;
  readonly configurationSet: ConfigurationSet;

  constructor(scope: Construct, id: string, props: EmailOutboxProps) {
    super(scope, id);
    this.configurationSet = new ConfigurationSet(this, 'ConfigurationSet', {
      configurationSetName: `${props.namePrefix}-outbox`,
    });
    this.function = new DeskpipeFunction(this, emailOutboxWorker.name, {
      entry: join(props.projectRoot, emailOutboxWorker.entry),
      projectRoot: props.projectRoot,
      namePrefix: props.namePrefix,
      memorySize: props.memorySize,
      logRetention: props.logRetention,
      timeout: Duration.seconds(emailOutboxWorker.timeoutSeconds),
      reservedConcurrentExecutions: props.reservedConcurrency,
    })
      .bindTable(props.table, emailOutboxWorker.tableActions)
      .bindIndexQueries(props.table, emailOutboxWorker.indexQueries);
    this.function.addEnvironment('SES_CONFIGURATION_SET', this.configurationSet.configurationSetName);
    const { account, region, partition } = Stack.of(this);
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ['ses:SendEmail', 'ses:SendRawEmail'],
        resources: [
          // Any verified identity of the account may be a From (the accounts' addresses are data, not stack).
          `arn:${partition}:ses:${region}:${account}:identity/*`,
          `arn:${partition}:ses:${region}:${account}:configuration-set/${this.configurationSet.configurationSetName}`,
        ],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.function,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "The outbox sends from the accounts' addresses, which are data (account files), not stack: any verified " +
            'SES identity of the AWS account, and only with the stage configuration set.',
          appliesTo: [{ regex: '/^Resource::arn:.*:ses:.*:identity\\/\\*$/g' }],
        },
      ],
      true,
    );
    if (props.reservedConcurrency < 2) {
      throw new Error(
        'emailOutbox needs a reserved concurrency of 2 at least: a run overlaps the next one by its tail',
      );
    }
    new Rule(this, 'EveryMinute', {
      ruleName: `${props.namePrefix}-email-outbox`,
      description: 'Runs the outbox runner (functions/email-outbox.ts) for most of each minute.',
      schedule: Schedule.rate(Duration.minutes(1)),
      // A run missed is made up by the next one, a minute later: no retries of the invocation.
      targets: [new LambdaFunction(this.function, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
    });
  }
}
