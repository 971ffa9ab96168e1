import { Duration, NestedStack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import {
  erasureWorker,
  importRunnerWorker,
  organizationClearingWorker,
  PURGE_EVERY_MINUTES,
  purgeWorker,
  slaBreachesWorker,
  ticketQueueWorker,
  webhookDueWorker,
  webhookStreamWorker,
} from '#functions/workers.ts';
import type { DeskpipeFunction } from '../constructs/deskpipe-function.ts';
import type { MailReceiving } from '../constructs/mail-receiving.ts';
import { ScheduledRunner } from '../constructs/scheduled-runner.ts';
import { WebhookDispatcher } from '../constructs/webhook-dispatcher.ts';
import { runnerDefaults, type StageParts } from './stage-parts.ts';

export interface WorkerStackProps extends StageParts {
  /** The mail bucket's owner: the purge and the erasures remove and rewrite the accounts' copies. */
  mail: MailReceiving;
}

/**
 * The background workers (a nested stack of the stage): the webhook dispatcher (the table's stream and the due
 * runners' schedules invoke it) and the scheduled runners: service-level breaches, the trash's purge, erasures,
 * organization clearings.
 * The mail workers are the mail's (MailStack).
 */
export class WorkerStack extends NestedStack {
  readonly webhooks: WebhookDispatcher;
  readonly breaches: ScheduledRunner;
  readonly purge: ScheduledRunner;
  readonly erasures: ScheduledRunner;
  readonly organizationClearing: ScheduledRunner;
  readonly ticketQueue: ScheduledRunner;
  readonly imports: ScheduledRunner;
  /** Its functions, by their names in functions/workers.ts. */
  readonly functions: Readonly<Record<string, DeskpipeFunction>>;

  constructor(scope: Construct, id: string, props: WorkerStackProps) {
    super(scope, id, {
      description: `deskpipe ${props.stage}: the webhook dispatcher and the scheduled runners`,
    });
    const { config } = props;
    // Webhooks: not API routes; the table's stream and a schedule invoke them.
    this.webhooks = new WebhookDispatcher(this, 'Webhooks', {
      ...runnerDefaults(props),
      concurrency: config.workerConcurrency,
      dueRunners: config.webhookDueRunners,
    });
    // Service-level breaches on time: a schedule invokes it every minute for most of the minute (docs/sla.md).
    this.breaches = new ScheduledRunner(this, 'SlaBreaches', {
      ...runnerDefaults(props),
      worker: slaBreachesWorker,
      description:
        'Runs the service-level breach runner (functions/sla-breaches.ts) for most of each minute.',
      slug: 'sla-breaches',
      everyMinutes: 1,
      ruleId: 'EveryMinute',
      notRunningAfter: Duration.minutes(5),
      notRunningMeans:
        'The service-level breach runner did not run for 5 minutes: breaches are late. See docs/deploy.md#sla-breaches-not-running.',
      reservedConcurrency: config.workerConcurrency.slaBreaches,
    });
    // The trash's purge (decisions.md, "Deleting, restoring and erasing"): every few minutes, until nothing is due.
    this.purge = new ScheduledRunner(this, 'TrashPurge', {
      ...runnerDefaults(props),
      worker: purgeWorker,
      description:
        'Purges what is past its purge time in the trash (functions/trash-purge.ts), until nothing is due.',
      slug: 'trash-purge',
      everyMinutes: PURGE_EVERY_MINUTES,
      notRunningAfter: Duration.hours(1),
      notRunningMeans:
        'The trash purge did not run for an hour: objects stay past their purge time. See docs/deploy.md#trash-purge-not-running.',
      reservedConcurrency: config.workerConcurrency.trashPurge,
    });
    props.mail.grantPurge(this.purge.function); // A purged ticket's mail goes with it (each account's copies).
    // Erasures (decisions.md, "Erasing a person"): every minute, until no running erasure has steps to go.
    this.erasures = new ScheduledRunner(this, 'Erasures', {
      ...runnerDefaults(props),
      worker: erasureWorker,
      description:
        'Runs the erasures of people (functions/erasures.ts), a bounded step at a time, each minute.',
      slug: 'erasures',
      everyMinutes: 1,
      notRunningAfter: Duration.minutes(15),
      notRunningMeans:
        'The erasure runner did not run for 15 minutes: erasures stay running. See docs/deploy.md#erasures-not-running.',
      reservedConcurrency: config.workerConcurrency.erasures,
    });
    props.mail.grantErase(this.erasures.function);
    // A deleted organization's tickets and contacts (decisions.md, "People"): every minute, for most of it.
    this.organizationClearing = new ScheduledRunner(this, 'OrganizationClearing', {
      ...runnerDefaults(props),
      worker: organizationClearingWorker,
      description:
        "Clears deleted organizations from their tickets and contacts and hands back retired agents' open tickets (functions/organization-clearing.ts), each minute.",
      slug: 'organization-clearing',
      everyMinutes: 1,
      notRunningAfter: Duration.minutes(15),
      notRunningMeans:
        'The organization clearing runner did not run for 15 minutes: deleted organizations stay on tickets, retired agents keep theirs. See docs/deploy.md#organization-clearing-not-running.',
      reservedConcurrency: config.workerConcurrency.organizationClearing,
    });
    // The queue (decisions.md, "People"): an agent who frees up takes the next waiting tickets, every minute.
    this.ticketQueue = new ScheduledRunner(this, 'TicketQueue', {
      ...runnerDefaults(props),
      worker: ticketQueueWorker,
      description: 'Hands queued tickets to agents who freed up (functions/ticket-queue.ts), each minute.',
      slug: 'ticket-queue',
      everyMinutes: 1,
      notRunningAfter: Duration.minutes(15),
      notRunningMeans:
        'The queue runner did not run for 15 minutes: queued tickets wait for freed agents. See docs/deploy.md#ticket-queue-not-running.',
      reservedConcurrency: config.workerConcurrency.ticketQueue,
    });
    this.imports = importRunner(this, props);
    this.functions = {
      [webhookStreamWorker.name]: this.webhooks.streamFunction,
      [webhookDueWorker.name]: this.webhooks.dueFunction,
      [slaBreachesWorker.name]: this.breaches.function,
      [purgeWorker.name]: this.purge.function,
      [erasureWorker.name]: this.erasures.function,
      [organizationClearingWorker.name]: this.organizationClearing.function,
      [ticketQueueWorker.name]: this.ticketQueue.function,
      [importRunnerWorker.name]: this.imports.function,
    };
  }
}

/**
 * Imports (decisions.md, "Imports"): due jobs a page at a time from their checkpoints, every minute. It copies the
 * sources' attachments into the mail bucket's attachments/; the secrets key and the uploads are the stage's
 * (ImportStorage, granted in infra/stack.ts with createImport's).
 */
function importRunner(scope: Construct, props: WorkerStackProps): ScheduledRunner {
  const runner = new ScheduledRunner(scope, 'ImportRunner', {
    ...runnerDefaults(props),
    worker: importRunnerWorker,
    description: 'Runs the import jobs a page at a time (functions/import-runner.ts), each minute.',
    slug: 'import-runner',
    everyMinutes: 1,
    notRunningAfter: Duration.minutes(15),
    notRunningMeans:
      'The import runner did not run for 15 minutes: imports wait. See docs/deploy.md#import-runner-not-running.',
    reservedConcurrency: props.config.workerConcurrency.importRunner,
  });
  props.mail.grantImportAttachments(runner.function);
  return runner;
}
