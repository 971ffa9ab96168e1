import { NestedStack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { emailInboundQueueWorker, emailInboundWorker, emailOutboxWorker } from '#functions/workers.ts';
import type { DeskpipeFunction } from '../constructs/deskpipe-function.ts';
import { EmailOutbox } from '../constructs/email-outbox.ts';
import { MailReceiving } from '../constructs/mail-receiving.ts';
import { runnerDefaults, type StageParts } from './stage-parts.ts';

/**
 * Mail (a nested stack of the stage; docs/email.md): receiving (SES's rule set → the mail bucket → the inbound
 * function, its failed-mail queue → the inbound fair queue → the processing function, its dead-letter queue) and sending (the outbox runner, the SES configuration set, the feedback topic
 * that brings bounces and complaints back to the inbound function).
 */
export class MailStack extends NestedStack {
  readonly receiving: MailReceiving;
  readonly outbox: EmailOutbox;
  /** Its functions, by their names in functions/workers.ts. */
  readonly functions: Readonly<Record<string, DeskpipeFunction>>;

  constructor(scope: Construct, id: string, props: StageParts) {
    super(scope, id, { description: `deskpipe ${props.stage}: receiving and sending mail` });
    const { config } = props;
    this.receiving = new MailReceiving(this, 'Mail', {
      ...props.functionDefaults,
      mail: config.mail,
      table: props.table,
      reservedConcurrency: config.workerConcurrency.emailInbound,
      queueConcurrency: config.workerConcurrency.emailInboundQueue,
      protectData: config.protectData,
      topic: props.topic,
    });
    // Outbound mail: a schedule invokes the outbox runner, which sends through SES (docs/email.md, "Sending").
    this.outbox = new EmailOutbox(this, 'EmailOutbox', {
      ...runnerDefaults(props),
      reservedConcurrency: config.workerConcurrency.emailOutbox,
      // Bounces and complaints come back to the function that handles what SES hands back (mail received).
      feedbackTo: this.receiving.function,
      sendRatePerSecond: config.mail.sendRatePerSecond,
    });
    this.functions = {
      [emailInboundWorker.name]: this.receiving.function,
      [emailInboundQueueWorker.name]: this.receiving.inboundQueue.function,
      [emailOutboxWorker.name]: this.outbox.function,
    };
  }
}
