import { Duration, Stack } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { ConfigurationSet } from 'aws-cdk-lib/aws-ses';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { emailOutboxWorker } from '#functions/workers.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';
import { ScheduledRunner, type ScheduledRunnerProps } from './scheduled-runner.ts';

/**
 * The outbox deployed (docs/email.md, "Sending"): one function, run every minute by a schedule rule for most of
 * the minute (functions/email-outbox.ts): a ScheduledRunner (its table actions, Query on the due index gsi2, the
 * not-running alarm) granted SES sending with the stage's configuration set only. The configuration set is here so that every mail is sent
 * with one; its event destinations (bounces and complaints back to the service) are not wired yet (docs/email.md,
 * "Not done"). Its errors and throttles are alarmed with every function's (ServiceAlarms).
 */
export type EmailOutboxProps = Omit<
  ScheduledRunnerProps,
  'worker' | 'description' | 'slug' | 'everyMinutes' | 'notRunningAfter' | 'notRunningMeans'
>;

export class EmailOutbox extends Construct {
  readonly function: DeskpipeFunction;
  readonly configurationSet: ConfigurationSet;

  constructor(scope: Construct, id: string, props: EmailOutboxProps) {
    super(scope, id);
    this.configurationSet = new ConfigurationSet(this, 'ConfigurationSet', {
      configurationSetName: `${props.namePrefix}-outbox`,
    });
    // A scheduled runner like the breach runner and the purge, with SES on top.
    this.function = new ScheduledRunner(this, 'Runner', {
      ...props,
      worker: emailOutboxWorker,
      description: 'Runs the outbox runner (functions/email-outbox.ts) for most of each minute.',
      slug: 'email-outbox',
      everyMinutes: 1,
      notRunningAfter: Duration.minutes(5),
      notRunningMeans:
        'The outbox runner did not run for 5 minutes: replies are not mailed. See docs/email.md (a stuck outbox).',
    }).function;
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
  }
}
