import type { IndexName } from '#lib/data/store/table.ts';
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
  /**
   * Whether it is given the key-hash secret (lib/accounts/key-hash.ts): it names an address by its keyed hash, or
   * writes or reads the index of tickets, deals or contacts, whose keys name free-text values and search terms by
   * the account's keyed hash (docs/data-model.md, "Keyed values in keys"). test/support/table-actions-setup.ts fails
   * a test in which a function without it takes a keyed hash.
   */
  readonly keyHashSecret: boolean;
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
  keyHashSecret: false,
} as const satisfies WorkerDefinition;

/**
 * Scheduled every minute, runs the due runner for DUE_RUN_MS: the due index (Query on gsi2), leases and claims
 * (UpdateItem), pending deliveries and events (Query), attempts recorded (a transaction of Put, Update and
 * DeleteItems), a lease's release (GetItem); then waits for the attempts still running (up to the attempt limit).
 */
export const webhookDueWorker = {
  name: 'webhooksDue',
  entry: 'functions/webhooks-due.ts',
  tableActions: ['Query', 'GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
  // gsi2: the due index.
  indexQueries: ['gsi2'],
  timeoutSeconds: 80,
  keyHashSecret: false,
} as const satisfies WorkerDefinition;

/**
 * Scheduled every minute, runs the service-level breach runner (docs/sla.md) for most of it: the tickets' due
 * index (Query on gsi2), each due ticket (GetItem), the breach commit (a transaction of the ticket's Put, its
 * posting's Put or Delete, counter and block UpdateItems, the event's place), the feed's places (UpdateItem, a
 * void's PutItem), and beside the commit the directory entries of dimensions new to the container (BatchWriteItem:
 * `sla#breached` the first time, lib/data/index/ since issue 40). It also runs the time rules due at the same
 * entries (lib/rules/time-change.ts): a change as a PATCH's, whose rules may read organizations (BatchGetItem).
 */
export const slaBreachesWorker = {
  name: 'slaBreaches',
  entry: 'functions/sla-breaches.ts',
  tableActions: ['Query', 'GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
  indexQueries: ['gsi2'],
  timeoutSeconds: 70,
  keyHashSecret: true,
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
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/** How often the trash's purge runs deployed: a purge is at most this late (plus its run) past its time. */
export const PURGE_EVERY_MINUTES = 10;
/** How long one purge run may go on (it stops sooner once nothing is due); its timeout leaves 60 s beyond. */
export const PURGE_RUN_MS = 240_000;

/**
 * Scheduled every PURGE_EVERY_MINUTES, runs the trash's purge (lib/trash/purge.ts) until nothing is due: the purge
 * due index (Query on gsi2), each trash item (GetItem), a ticket's messages (Query on the table), its inbound log
 * entries (Query on gsi2) and acknowledgement (GetItem), their, their Message-ID items' and any leftover index
 * items' deletes (BatchWriteItem); once an address's dimension has no posting left (a Query of one item), its
 * counter shards and directory entry (a transaction of DeleteItems, after their GetItem and Query) and emptied
 * blocks (DeleteItem); the trash item's conditional delete (DeleteItem). In the mail bucket, a purged ticket's mail
 * (its account's copies and attachments) is removed with it (infra/constructs/mail-receiving.ts, grantPurge).
 */
export const purgeWorker = {
  name: 'trashPurge',
  entry: 'functions/trash-purge.ts',
  tableActions: ['Query', 'GetItem', 'BatchWriteItem', 'DeleteItem'],
  indexQueries: ['gsi2'],
  timeoutSeconds: 300,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/** How long one erasure run may go on (it stops sooner once no erasure has steps to go); timeout 60 s beyond. */
export const ERASURE_RUN_MS = 50_000;

/**
 * Scheduled every minute, runs the erasure runner (lib/erasures/runner.ts) until no erasure has steps to go: the
 * erasures' due index and the object references (Query on gsi2), the trash lists (Query on gsi1), the person's
 * postings, messages and copies (Query, GetItem; a page of postings' tickets by BatchGetItem), the objects' commits (transactions of Put, Update, Delete and
 * ConditionCheck items), copies put again (PutItem), the progress saves (UpdateItem, PutItem), deletes (DeleteItem;
 * a trashed object's purge and the address's leftovers by BatchWriteItem). Its role also rewrites the mail
 * bucket's raw mail and attachments, and removes those of a ticket it purges (infra/constructs/mail-receiving.ts,
 * grantErase).
 */
export const erasureWorker = {
  name: 'erasures',
  entry: 'functions/erasures.ts',
  tableActions: [
    'Query',
    'GetItem',
    'BatchGetItem',
    'PutItem',
    'UpdateItem',
    'DeleteItem',
    'BatchWriteItem',
    'ConditionCheckItem',
  ],
  indexQueries: ['gsi1', 'gsi2'],
  timeoutSeconds: 110,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/**
 * Invoked by the stage's SES receipt rule once the raw mail is in the mail bucket (infra/constructs/mail-receiving.ts):
 * routes each mail (lib/email/ses-receipt.ts: its accounts' addresses and log entries by GetItem, a mail over the
 * limit logged `rejected` by PutItem, each account's copy queued in the inbound fair queue). Also invoked by the
 * outbox's feedback topic with SES's bounces and complaints (lib/email/ses-feedback.ts: the same marking and
 * suppression a mailed report gets, hence the rest of its table actions).
 */
export const emailInboundWorker = {
  name: 'emailInbound',
  entry: 'functions/email-inbound.ts',
  tableActions: ['Query', 'GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
  indexQueries: [],
  timeoutSeconds: 120,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/**
 * Consumes the inbound fair queue (infra/constructs/inbound-queue.ts): each account's copy of a received mail
 * handed to the one inbound handler (lib/email/receive.ts) with the S3 store, so the table actions of a message post
 * or a ticket create (a transaction of Put, Update and Delete items, the largest tickets' marked items by
 * BatchWriteItem) and the lookups of threading (GetItem, Query). A batch is INBOUND_QUEUE_BATCH mails processed in
 * turn: ~0.2 s each (the local bench), at most ~12 s for one of 25 MiB, well inside its timeout.
 */
export const emailInboundQueueWorker = {
  name: 'emailInboundQueue',
  entry: 'functions/email-inbound-queue.ts',
  tableActions: ['Query', 'GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
  indexQueries: [],
  timeoutSeconds: 60,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/** How long one clearing run may go on (polling every 2 s meanwhile); its timeout leaves 30 s beyond. */
export const CLEARING_RUN_MS = 50_000;

/**
 * Scheduled every minute, runs the people follow-ups runner (lib/organizations/clearing-runner.ts: organization
 * clearings and hand-backs, lib/people/handback-runner.ts) for most of the minute, so a deletion's tickets and
 * contacts are cleared, and a retired agent's or team leaver's open tickets unassigned, within 60 seconds: the
 * clearings' and hand-backs' due indexes (Query on gsi2), a hand-back (GetItem) and its progress (UpdateItem,
 * DeleteItem), an agent's status-and-assignee queue (Query), a clearing (GetItem), an organization's postings (Query),
 * the tickets or contacts of a page of postings (BatchGetItem), an agent (GetItem), a ticket read again (GetItem), its open
 * deals (Query), each clearing commit (a transaction of the entity's Put, its postings' Put and Delete, counter and
 * block UpdateItems, the event's place), a posting no entity holds (DeleteItem), the clearing's postponement
 * (UpdateItem) and end (DeleteItem); beside a commit, the directory entries of dimensions new to the container
 * (BatchWriteItem). And the rules' moment sweeps (lib/rules/sweep-runner.ts): their due index, a sweep (GetItem)
 * and its progress, the account's active rules (Query), a status's postings and their tickets, each ticket's new
 * moment (a transaction with a ConditionCheckItem on the sweep).
 */
export const organizationClearingWorker = {
  name: 'organizationClearing',
  entry: 'functions/organization-clearing.ts',
  tableActions: [
    'Query',
    'GetItem',
    'BatchGetItem',
    'PutItem',
    'UpdateItem',
    'DeleteItem',
    'ConditionCheckItem',
    'BatchWriteItem',
  ],
  indexQueries: ['gsi2'],
  timeoutSeconds: 80,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/** How long one queue run may go on (polling every 2 s meanwhile); its timeout leaves 30 s beyond. */
export const QUEUE_RUN_MS = 50_000;

/**
 * Scheduled every minute, runs the queue runner (lib/tickets/queue-runner.ts) for most of the minute, so an agent
 * who frees up takes the queue's next ticket within 60 seconds: the freed entries' due index (Query on gsi2), the
 * configuration (GetItem, Query), the agent's cell and a queue's head (Query), the ticket (GetItem), each hand-over
 * commit (a transaction of the ticket's Put, its postings' Put and Delete, counter and block UpdateItems, the
 * event's place), the freed entry's end (DeleteItem); beside a commit, the directory entries of dimensions new to
 * the container (BatchWriteItem).
 */
export const ticketQueueWorker = {
  name: 'ticketQueue',
  entry: 'functions/ticket-queue.ts',
  tableActions: ['Query', 'GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
  indexQueries: ['gsi2'],
  timeoutSeconds: 80,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

/** How long one import run starts steps (polling every 2 s meanwhile). */
export const IMPORT_RUN_MS = 50_000;
/**
 * How long before the function's timeout an import run cuts the steps still in flight (their reads stop; each job
 * is released from its checkpoint, a page's writes already under way end first): room for those saves.
 */
export const IMPORT_STOP_MARGIN_MS = 30_000;

/**
 * Scheduled every minute, runs the import runner (lib/imports/runner.ts): the jobs' due index
 * (Query on gsi2), a job's lease and saves (UpdateItem), its error rows (BatchWriteItem), its end (a transaction of the
 * job's Update, the active import's Delete and the event's place); and what the writers write (lib/imports/people.ts,
 * tickets.ts: source keys, people, tickets and their index, as the API's own writes do). Scheduled rather than
 * queue-driven or a state machine: docs/imports.md, "The runner", says why. Besides the table: the KMS key's
 * Decrypt (credentials), the upload bucket's objects (ndjson files) and the mail bucket's attachments/ (copies),
 * granted by infra/nested/worker-stack.ts.
 */
export const importRunnerWorker = {
  name: 'importRunner',
  entry: 'functions/import-runner.ts',
  tableActions: [
    'Query',
    'GetItem',
    'BatchGetItem',
    'PutItem',
    'UpdateItem',
    'DeleteItem',
    'BatchWriteItem',
    'ConditionCheckItem',
  ],
  indexQueries: ['gsi1', 'gsi2'],
  // Lambda's longest: a step started at the end of the 50 s of starts has 820 s before it is cut, more than the
  // slowest page the sources make at the lowest rate share (a Freshdesk page of 100 tickets, ~200 requests at a tenth
  // of 200 a minute: 10 minutes). docs/imports.md, "The runner".
  timeoutSeconds: 900,
  keyHashSecret: true,
} as const satisfies WorkerDefinition;

export const workers: readonly WorkerDefinition[] = [
  webhookStreamWorker,
  webhookDueWorker,
  slaBreachesWorker,
  emailOutboxWorker,
  purgeWorker,
  emailInboundWorker,
  emailInboundQueueWorker,
  erasureWorker,
  organizationClearingWorker,
  ticketQueueWorker,
  importRunnerWorker,
];
