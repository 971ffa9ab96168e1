import { Duration, Stack } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { ConfigurationSet, EmailSendingEvent, EventDestination } from 'aws-cdk-lib/aws-ses';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { LambdaSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { emailOutboxWorker } from '#functions/workers.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';
import { ScheduledRunner, type ScheduledRunnerProps } from './scheduled-runner.ts';

/**
 * The outbox deployed (docs/email.md, "Sending"): one function, run every minute by a schedule rule for most of
 * the minute (functions/email-outbox.ts): a ScheduledRunner (its table actions, Query on the due index gsi2, the
 * not-running alarm) granted SES sending with the stage's configuration set only. The configuration set is here so that every mail is sent
 * with one; its bounces and complaints come back by the feedback topic. Its errors and throttles are alarmed with every function's (ServiceAlarms).
 */
export type EmailOutboxProps = Omit<
  ScheduledRunnerProps,
  'worker' | 'description' | 'slug' | 'everyMinutes' | 'notRunningAfter' | 'notRunningMeans'
> & {
  /** The function SES's bounces and complaints of sent mail go to (by the feedback topic). */
  feedbackTo: IFunction;
  /** The SES sending quota, mails a second: the runner's pace (EMAIL_SEND_RATE, lib/email/outbox/pace.ts). */
  sendRatePerSecond: number;
};

export class EmailOutbox extends Construct {
  readonly function: DeskpipeFunction;
  readonly configurationSet: ConfigurationSet;
  readonly feedback: Topic;

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
    // Bounces and complaints of sent mail, back to the service (lib/email/ses-feedback.ts): the configuration set
    // publishes them to this topic (the destination grants SES sns:Publish from this set only), which invokes
    // the function that handles what SES hands back. They name the people mail went to: encrypted at rest, with a
    // key of the topic's own (SES cannot use the AWS managed SNS key), which SES may use for this configuration
    // set's notifications to this topic only; SNS decrypts for its one subscriber itself.
    const { account, region, partition } = Stack.of(this);
    const topicName = `${props.namePrefix}-email-feedback`;
    const key = new Key(this, 'FeedbackKey', {
      description: `Encrypts ${topicName}: SES's bounce and complaint notifications of the stage's outbox.`,
      enableKeyRotation: true,
    });
    key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('ses.amazonaws.com')],
        actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
        resources: ['*'],
        conditions: {
          StringEquals: {
            'aws:SourceAccount': account,
            'kms:EncryptionContext:aws:sns:topicArn': `arn:${partition}:sns:${region}:${account}:${topicName}`,
          },
          ArnLike: {
            'aws:SourceArn': `arn:${partition}:ses:${region}:${account}:configuration-set/${this.configurationSet.configurationSetName}`,
          },
        },
      }),
    );
    this.feedback = new Topic(this, 'Feedback', { topicName, enforceSSL: true, masterKey: key });
    this.configurationSet.addEventDestination('Feedback', {
      destination: EventDestination.snsTopic(this.feedback),
      events: [EmailSendingEvent.BOUNCE, EmailSendingEvent.COMPLAINT],
    });
    this.feedback.addSubscription(new LambdaSubscription(props.feedbackTo));
    this.function.addEnvironment('SES_CONFIGURATION_SET', this.configurationSet.configurationSetName);
    this.function.addEnvironment('EMAIL_SEND_RATE', String(props.sendRatePerSecond));
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
