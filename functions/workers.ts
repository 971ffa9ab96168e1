import type { IndexName } from '#lib/data/table.ts';
import type { TableAction } from './routes.ts';

/**
 * The functions that are not API routes: the webhook dispatcher's (docs/webhooks.md). Declared here, beside the
 * route table and apart from it as the authorizer is, so the stack, the grant checks of the tests
 * (test/support/table-actions.ts) and the stack test read one declaration. `entry` is relative to the repository
 * root and must export `handler`.
 */
export interface WorkerDefinition {
  /** The Lambda function's logical id and name suffix. */
  readonly name: string;
  readonly entry: string;
  /** The DynamoDB actions the function uses on the table: its IAM policy allows exactly these. */
  readonly tableActions: readonly TableAction[];
  /** The indexes it queries (Query on each, nothing else). */
  readonly indexQueries: readonly IndexName[];
  /** How long one invocation may run, seconds. */
  readonly timeoutSeconds: number;
}

/**
 * The stream's event source mapping hands it batches of new event items: it reads the account's endpoints
 * (Query), puts deliveries and pending items (a transaction of PutItems) and updates the endpoint's due entry.
 */
export const webhookStreamWorker = {
  name: 'webhooksStream',
  entry: 'functions/webhooks-stream.ts',
  tableActions: ['Query', 'PutItem', 'UpdateItem'],
  indexQueries: [],
  timeoutSeconds: 60,
} as const satisfies WorkerDefinition;

/**
 * Scheduled every minute, runs the due runner for DUE_RUN_MS: the due index (Query on gsi1), leases and claims
 * (UpdateItem), pending deliveries and events (Query), attempts recorded (a transaction of Put, Update and
 * DeleteItems), a lease's release (GetItem); then waits for the attempts still running (up to the attempt limit).
 */
export const webhookDueWorker = {
  name: 'webhooksDue',
  entry: 'functions/webhooks-due.ts',
  tableActions: ['Query', 'GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
  // gsi2: the due index; gsi1: due entries written before it, read until none is left (LEGACY_DUE_READS).
  indexQueries: ['gsi2', 'gsi1'],
  timeoutSeconds: 80,
} as const satisfies WorkerDefinition;

/**
 * Scheduled every minute, runs the service-level breach runner (docs/sla.md) for most of it: the tickets' due
 * index (Query on gsi2), each due ticket (GetItem), the breach commit (a transaction of the ticket's Put, its
 * posting's Put or Delete, counter and block UpdateItems, the event's place), the feed's places (UpdateItem, a
 * void's PutItem).
 */
export const slaBreachesWorker = {
  name: 'slaBreaches',
  entry: 'functions/sla-breaches.ts',
  tableActions: ['Query', 'GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
  indexQueries: ['gsi2'],
  timeoutSeconds: 70,
} as const satisfies WorkerDefinition;

/**
 * Scheduled every minute, runs the outbox runner (docs/email.md, "Sending") for most of it: the outbox's due index
 * (Query on gsi2), a mail's claim (UpdateItem), its ticket (GetItem) and the messages before it (Query), the
 * suppression lookup (GetItem), the record (a transaction of the message's UpdateItem, the Message-ID claims'
 * PutItems, and for a failure the event's place (UpdateItem) and item (PutItem)); a place closed after a failed
 * commit (PutItem). It sends through SES (its role is granted sending with the stage's configuration set).
 */
export const emailOutboxWorker = {
  name: 'emailOutbox',
  entry: 'functions/email-outbox.ts',
  tableActions: ['Query', 'GetItem', 'PutItem', 'UpdateItem'],
  indexQueries: ['gsi2'],
  timeoutSeconds: 100,
} as const satisfies WorkerDefinition;

export const workers: readonly WorkerDefinition[] = [
  webhookStreamWorker,
  webhookDueWorker,
  slaBreachesWorker,
  emailOutboxWorker,
];
