/**
 * The route table: the one list of the API's routes. The CDK stack builds API Gateway from it and the local
 * gateway serves it, so a route cannot exist in one and not the other (test/system/route-drift.test.ts checks it).
 * `entry` is relative to the repository root and must export `handler`.
 */
import type { Scope } from '#lib/accounts/scopes.ts';
import type { IndexName } from '#lib/data/store/table.ts';
import { SHARED_DOMAINS_FILE } from '#lib/organizations/shared-domains-file.ts';

/** A route that takes no key: the published contract and its page. */
export const PUBLIC = 'public';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDeclaration {
  /** Stable name: the Lambda function's logical id, the route name in logs, how its handler finds it (`route()`). */
  readonly name: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly entry: string;
  /**
   * The scope a key needs to call this route (lib/accounts/scopes.ts), or PUBLIC: no key at all. The one
   * declaration of who may call a route: the stack (authorizer or none), the local gateway, the OpenAPI
   * document's security requirement and the handler stack's check (lib/http/scope.ts) all read it.
   */
  readonly scope: Scope | typeof PUBLIC;
  /**
   * The trash's routes, whose scope follows the object's type (decisions.md, "API keys: scopes"): `query`, the
   * `type` query parameter names the types shown and each needs its `<type>:read` (all three without it);
   * `object`, the object's type needs its `<type>:write`, checked once the trash item is read (a key holding none
   * of the three is refused first). `scope` then names the ticket's, the one a 403 names when none is held.
   */
  readonly scopeByType?: 'query' | 'object';
  /** The DynamoDB actions the function uses on the table: its IAM policy allows exactly these (none: no table). */
  readonly tableActions: readonly TableAction[];
  /** Indexes of the table the function queries (nothing else on them is allowed). */
  readonly indexQueries?: readonly IndexName[];
  /** Package files the function reads at run time (node_modules-relative): copied beside its bundle. */
  readonly files?: readonly string[];
  /** The mail store's objects the function reads (deployed: GetObject on the mail bucket's `raw/` or `attachments/`). */
  readonly mailObjects?: 'raw' | 'attachments';
}

/**
 * DynamoDB actions a function may be granted (a transaction needs the action of each of its items). Every route
 * past the authorizer makes an UpdateItem: its request's rate count (lib/data/requests/rate-limit.ts).
 */
export type TableAction =
  | 'GetItem'
  | 'BatchGetItem'
  | 'Query'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchWriteItem'
  | 'ConditionCheckItem';

export const authorizerEntry = 'functions/authorizer.ts';
/** The authorizer reads keys and accounts, and writes a key's last-used time. */
export const authorizerTableActions: readonly TableAction[] = ['GetItem', 'UpdateItem'];

const declared = [
  {
    name: 'listPipelines',
    method: 'GET',
    path: '/api/pipelines',
    entry: 'functions/pipelines-list.ts',
    scope: 'deals:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'createTicket',
    method: 'POST',
    path: '/api/tickets',
    entry: 'functions/tickets-create.ts',
    scope: 'tickets:write',
    // BatchWriteItem: the marked items of the largest tickets; DeleteItem: releasing an Idempotency-Key;
    // BatchGetItem: the organizations its rules set (lib/rules/run.ts).
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'BatchWriteItem',
      'DeleteItem',
    ],
  },
  {
    name: 'listTickets',
    method: 'GET',
    path: '/api/tickets',
    entry: 'functions/tickets-list.ts',
    scope: 'tickets:read',
    tableActions: ['Query', 'BatchGetItem', 'UpdateItem'],
  },
  {
    name: 'getTicket',
    method: 'GET',
    path: '/api/tickets/{ticket}',
    entry: 'functions/tickets-get.ts',
    scope: 'tickets:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
  },
  {
    name: 'updateTicket',
    method: 'PATCH',
    path: '/api/tickets/{ticket}',
    entry: 'functions/tickets-update.ts',
    scope: 'tickets:write',
    // BatchWriteItem: marked items of the largest updates; DeleteItem: releasing an Idempotency-Key; BatchGetItem:
    // the organizations its rules set (lib/rules/run.ts).
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
    ],
  },
  // A ticket's conversation (decisions.md, "Conversations"). A message commits with its ticket's change (as
  // PATCH) or creates a follow-up (as POST /api/tickets).
  // Deleting (decisions.md, "Deleting, restoring and erasing"): the object to the trash in one commit.
  {
    name: 'deleteTicket',
    method: 'DELETE',
    path: '/api/tickets/{ticket}',
    entry: 'functions/tickets-delete.ts',
    scope: 'tickets:write',
    // BatchWriteItem and UpdateItem: the search terms of the largest tickets, around the commit.
    tableActions: ['Query', 'GetItem', 'UpdateItem', 'PutItem', 'DeleteItem', 'BatchWriteItem'],
  },
  {
    name: 'createMessage',
    method: 'POST',
    path: '/api/tickets/{ticket}/messages',
    entry: 'functions/messages-create.ts',
    scope: 'tickets:write',
    // BatchGetItem: the organizations its rules set (lib/rules/run.ts).
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
    ],
  },
  // A macro applied (decisions.md, "Business rules"): one change of the ticket, committed as a PATCH's with what
  // its `updated` rules do. BatchGetItem: the organizations its actions and rules name; `?dry_run=true` writes
  // nothing (GetItem: the round-robin cursor it reads instead of taking).
  {
    name: 'applyMacro',
    method: 'POST',
    path: '/api/tickets/{ticket}/macros/{macro}',
    entry: 'functions/tickets-macro.ts',
    scope: 'tickets:write',
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
    ],
  },
  {
    name: 'listMessages',
    method: 'GET',
    path: '/api/tickets/{ticket}/messages',
    entry: 'functions/messages-list.ts',
    scope: 'tickets:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
  },
  {
    name: 'getMessage',
    method: 'GET',
    path: '/api/tickets/{ticket}/messages/{message}',
    entry: 'functions/messages-get.ts',
    scope: 'tickets:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
  },
  // A message's mail as received (decisions.md, "The e-mail channel"): read from the mail store (MAIL_BUCKET
  // deployed: `mailObjects` grants GetObject on that prefix, and ListBucket so a missing object is a 404).
  {
    name: 'getMessageRaw',
    method: 'GET',
    path: '/api/tickets/{ticket}/messages/{message}/raw',
    entry: 'functions/messages-raw.ts',
    scope: 'tickets:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
    mailObjects: 'raw',
  },
  {
    name: 'getMessageAttachment',
    method: 'GET',
    path: '/api/tickets/{ticket}/messages/{message}/attachments/{attachment}',
    entry: 'functions/messages-attachment.ts',
    scope: 'tickets:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
    mailObjects: 'attachments',
  },
  {
    name: 'listInboundMail',
    method: 'GET',
    path: '/api/email/inbound',
    entry: 'functions/email-inbound-list.ts',
    scope: 'email:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
  },
  {
    name: 'createDeal',
    method: 'POST',
    path: '/api/deals',
    entry: 'functions/deals-create.ts',
    scope: 'deals:write',
    // BatchWriteItem: the marked items of a deal (and new contact) with many words; ConditionCheckItem: an
    // existing contact still there at commit.
    tableActions: [
      'Query',
      'GetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
      'ConditionCheckItem',
    ],
  },
  {
    name: 'listDeals',
    method: 'GET',
    path: '/api/deals',
    entry: 'functions/deals-list.ts',
    scope: 'deals:read',
    tableActions: ['Query', 'GetItem', 'BatchGetItem', 'UpdateItem'],
  },
  {
    name: 'getDeal',
    method: 'GET',
    path: '/api/deals/{deal}',
    entry: 'functions/deals-get.ts',
    scope: 'deals:read',
    tableActions: ['Query', 'BatchGetItem', 'UpdateItem'],
  },
  {
    name: 'updateDeal',
    method: 'PATCH',
    path: '/api/deals/{deal}',
    entry: 'functions/deals-update.ts',
    scope: 'deals:write',
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
    ],
  },
  {
    name: 'deleteDeal',
    method: 'DELETE',
    path: '/api/deals/{deal}',
    entry: 'functions/deals-delete.ts',
    scope: 'deals:write',
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
    ],
  },
  {
    name: 'getPipelineBoard',
    method: 'GET',
    path: '/api/pipelines/{pipeline}/board',
    entry: 'functions/pipelines-board.ts',
    scope: 'deals:read',
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
  },
  {
    name: 'listContacts',
    method: 'GET',
    path: '/api/contacts',
    entry: 'functions/contacts-list.ts',
    scope: 'contacts:read',
    tableActions: ['Query', 'BatchGetItem', 'UpdateItem'],
  },
  {
    name: 'getContact',
    method: 'GET',
    path: '/api/contacts/{contact}',
    entry: 'functions/contacts-get.ts',
    scope: 'contacts:read',
    tableActions: ['Query', 'GetItem', 'BatchGetItem', 'UpdateItem'],
  },
  {
    name: 'updateContact',
    method: 'PATCH',
    path: '/api/contacts/{contact}',
    entry: 'functions/contacts-update.ts',
    scope: 'contacts:write',
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
    ],
  },
  {
    name: 'deleteContact',
    method: 'DELETE',
    path: '/api/contacts/{contact}',
    entry: 'functions/contacts-delete.ts',
    scope: 'contacts:write',
    // ConditionCheckItem: the contact's deals counter, unmoved since read.
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
      'ConditionCheckItem',
    ],
  },
  // Organizations (decisions.md, "People: agents, teams and organizations"): PutItem, UpdateItem and DeleteItem on
  // writes are the organization and its claims (in one transaction), the event places and an Idempotency-Key's
  // record; the writes that check domains read the shared-domain list beside their bundle.
  {
    name: 'listOrganizations',
    method: 'GET',
    path: '/api/organizations',
    entry: 'functions/organizations-list.ts',
    scope: 'organizations:read',
    // GetItem: the `domain` filter's claim.
    tableActions: ['Query', 'GetItem', 'UpdateItem'],
  },
  {
    name: 'createOrganization',
    method: 'POST',
    path: '/api/organizations',
    entry: 'functions/organizations-create.ts',
    scope: 'organizations:write',
    tableActions: ['PutItem', 'UpdateItem', 'DeleteItem'],
    files: [SHARED_DOMAINS_FILE],
  },
  {
    name: 'getOrganization',
    method: 'GET',
    path: '/api/organizations/{organization}',
    entry: 'functions/organizations-get.ts',
    scope: 'organizations:read',
    tableActions: ['GetItem', 'UpdateItem'],
  },
  {
    name: 'updateOrganization',
    method: 'PATCH',
    path: '/api/organizations/{organization}',
    entry: 'functions/organizations-update.ts',
    scope: 'organizations:write',
    tableActions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
    files: [SHARED_DOMAINS_FILE],
  },
  {
    name: 'deleteOrganization',
    method: 'DELETE',
    path: '/api/organizations/{organization}',
    entry: 'functions/organizations-delete.ts',
    scope: 'organizations:write',
    tableActions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  // Rules and macros (decisions.md, "Business rules"): an item each in the account's rules partition; every rule
  // write also writes the partition's META item (the active count and the rules version) in its transaction, with
  // its event places and an Idempotency-Key's record. rules/test reads the ticket, the configuration and the rules.
  {
    name: 'listRules',
    method: 'GET',
    path: '/api/rules',
    entry: 'functions/rules-list.ts',
    scope: 'rules:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'createRule',
    method: 'POST',
    path: '/api/rules',
    entry: 'functions/rules-create.ts',
    scope: 'rules:write',
    // Query: the configuration; BatchGetItem: the organizations a rule names.
    tableActions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'testRules',
    method: 'POST',
    path: '/api/rules/test',
    entry: 'functions/rules-test.ts',
    scope: 'rules:read',
    // Declared before /api/rules/{rule}: the local router takes the first path that matches. PutItem and
    // DeleteItem: an Idempotency-Key's record, as on every POST.
    tableActions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'backtestRule',
    method: 'POST',
    path: '/api/rules/{rule}/backtest',
    entry: 'functions/rules-backtest.ts',
    scope: 'rules:read',
    // Query: the rule, the configuration and the feed's partitions. PutItem and DeleteItem: an Idempotency-Key's
    // record, as on every POST.
    tableActions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'getRule',
    method: 'GET',
    path: '/api/rules/{rule}',
    entry: 'functions/rules-get.ts',
    scope: 'rules:read',
    // Query: the rule's firings (its `fired`).
    tableActions: ['GetItem', 'Query', 'UpdateItem'],
  },
  {
    name: 'updateRule',
    method: 'PATCH',
    path: '/api/rules/{rule}',
    entry: 'functions/rules-update.ts',
    scope: 'rules:write',
    tableActions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'deleteRule',
    method: 'DELETE',
    path: '/api/rules/{rule}',
    entry: 'functions/rules-delete.ts',
    scope: 'rules:write',
    // Query: the rule's firings (its `fired`, in the answer and the event).
    tableActions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'listMacros',
    method: 'GET',
    path: '/api/macros',
    entry: 'functions/macros-list.ts',
    scope: 'rules:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'createMacro',
    method: 'POST',
    path: '/api/macros',
    entry: 'functions/macros-create.ts',
    scope: 'rules:write',
    tableActions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'getMacro',
    method: 'GET',
    path: '/api/macros/{macro}',
    entry: 'functions/macros-get.ts',
    scope: 'rules:read',
    tableActions: ['GetItem', 'UpdateItem'],
  },
  {
    name: 'updateMacro',
    method: 'PATCH',
    path: '/api/macros/{macro}',
    entry: 'functions/macros-update.ts',
    scope: 'rules:write',
    tableActions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'deleteMacro',
    method: 'DELETE',
    path: '/api/macros/{macro}',
    entry: 'functions/macros-delete.ts',
    scope: 'rules:write',
    tableActions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  // The trash: what was deleted and not yet purged, and its restore (decisions.md, "Deleting, restoring and
  // erasing"); the scope follows the object's type.
  {
    name: 'listTrash',
    method: 'GET',
    path: '/api/trash',
    entry: 'functions/trash-list.ts',
    scope: 'tickets:read',
    scopeByType: 'query',
    tableActions: ['UpdateItem'],
    indexQueries: ['gsi1'],
  },
  {
    name: 'restoreTrash',
    method: 'POST',
    path: '/api/trash/{uuid}/restore',
    entry: 'functions/trash-restore.ts',
    scope: 'tickets:write',
    scopeByType: 'object',
    // ConditionCheckItem: a deal's contact, out of the trash; BatchWriteItem: marked items of the largest.
    tableActions: [
      'Query',
      'GetItem',
      'BatchGetItem',
      'UpdateItem',
      'PutItem',
      'DeleteItem',
      'BatchWriteItem',
      'ConditionCheckItem',
    ],
  },
  // Erasures (decisions.md, "Deleting, restoring and erasing"): started here, run by the erasure runner.
  {
    name: 'createErasure',
    method: 'POST',
    path: '/api/erasures',
    entry: 'functions/erasures-create.ts',
    scope: 'erasures:write',
    // PutItem (in the commit, with the kept answer) and DeleteItem: an Idempotency-Key's record.
    tableActions: ['PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'getErasure',
    method: 'GET',
    path: '/api/erasures/{erasure}',
    entry: 'functions/erasures-get.ts',
    scope: 'erasures:write',
    tableActions: ['GetItem', 'UpdateItem'],
  },
  {
    name: 'listEvents',
    method: 'GET',
    path: '/api/events',
    entry: 'functions/events-list.ts',
    scope: 'events:read',
    // PutItem: closing a place of the feed whose writer is gone; UpdateItem and PutItem (in a transaction) and
    // GetItem: moving a lagging shard's place counter past the page (lib/data/events.ts).
    tableActions: ['Query', 'PutItem', 'UpdateItem', 'GetItem'],
  },
  {
    name: 'getEvent',
    method: 'GET',
    path: '/api/events/{event}',
    entry: 'functions/events-get.ts',
    scope: 'events:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  // Webhook endpoints (decisions.md, "Webhooks"). PutItem and DeleteItem on writes: an Idempotency-Key's record.
  {
    name: 'createWebhook',
    method: 'POST',
    path: '/api/webhooks',
    entry: 'functions/webhooks-create.ts',
    scope: 'webhooks:manage',
    tableActions: ['PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'listWebhooks',
    method: 'GET',
    path: '/api/webhooks',
    entry: 'functions/webhooks-list.ts',
    scope: 'webhooks:manage',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'getWebhook',
    method: 'GET',
    path: '/api/webhooks/{webhook}',
    entry: 'functions/webhooks-get.ts',
    scope: 'webhooks:manage',
    tableActions: ['GetItem', 'UpdateItem'],
  },
  {
    name: 'updateWebhook',
    method: 'PATCH',
    path: '/api/webhooks/{webhook}',
    entry: 'functions/webhooks-update.ts',
    scope: 'webhooks:manage',
    tableActions: ['GetItem', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'deleteWebhook',
    method: 'DELETE',
    path: '/api/webhooks/{webhook}',
    entry: 'functions/webhooks-delete.ts',
    scope: 'webhooks:manage',
    tableActions: ['GetItem', 'DeleteItem', 'UpdateItem', 'PutItem'],
  },
  {
    name: 'rotateWebhookSecret',
    method: 'POST',
    path: '/api/webhooks/{webhook}/rotate-secret',
    entry: 'functions/webhooks-rotate-secret.ts',
    scope: 'webhooks:manage',
    tableActions: ['GetItem', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'listWebhookDeliveries',
    method: 'GET',
    path: '/api/webhooks/{webhook}/deliveries',
    entry: 'functions/webhooks-deliveries.ts',
    scope: 'webhooks:manage',
    tableActions: ['GetItem', 'Query', 'UpdateItem'],
  },
  {
    name: 'redeliverWebhook',
    method: 'POST',
    path: '/api/webhooks/{webhook}/redeliver',
    entry: 'functions/webhooks-redeliver.ts',
    scope: 'webhooks:manage',
    // Query: the events (lib/data/events.ts); PutItem/UpdateItem: the deliveries made pending again, the due entry.
    tableActions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  // API keys (decisions.md, "API keys: scopes, expiry, rotation"): GetItem reads the calling key as stored (every
  // key route), GetItem and Query the key set, TransactWrite's Put and Update write a key and the key-set guard.
  {
    name: 'createApiKey',
    method: 'POST',
    path: '/api/keys',
    entry: 'functions/keys-create.ts',
    scope: 'keys:manage',
    tableActions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'listApiKeys',
    method: 'GET',
    path: '/api/keys',
    entry: 'functions/keys-list.ts',
    scope: 'keys:manage',
    tableActions: ['GetItem', 'Query', 'UpdateItem'],
  },
  {
    name: 'revokeApiKey',
    method: 'DELETE',
    path: '/api/keys/{key}',
    entry: 'functions/keys-revoke.ts',
    scope: 'keys:manage',
    tableActions: ['GetItem', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'rotateApiKey',
    method: 'POST',
    path: '/api/keys/{key}/rotate',
    entry: 'functions/keys-rotate.ts',
    scope: 'keys:manage',
    tableActions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
  },
  // People (decisions.md, "People: agents, teams and organizations"): reads from the current configuration (Query
  // when the container's copy is older than the account's configuration version) and least-busy's agent cells;
  // writes read the configuration as stored and commit with their events (PutItem, UpdateItem and DeleteItem in
  // the transaction; UpdateItem: the id, the events' places, the configuration version; DeleteItem: releasing an
  // Idempotency-Key).
  {
    name: 'listAgents',
    method: 'GET',
    path: '/api/agents',
    entry: 'functions/agents-list.ts',
    scope: 'agents:read',
    // BatchGetItem: the page's agent cells.
    tableActions: ['Query', 'UpdateItem', 'BatchGetItem'],
  },
  {
    name: 'createAgent',
    method: 'POST',
    path: '/api/agents',
    entry: 'functions/agents-create.ts',
    scope: 'agents:write',
    tableActions: ['Query', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'getAgent',
    method: 'GET',
    path: '/api/agents/{agent}',
    entry: 'functions/agents-get.ts',
    scope: 'agents:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'updateAgent',
    method: 'PATCH',
    path: '/api/agents/{agent}',
    entry: 'functions/agents-update.ts',
    scope: 'agents:write',
    tableActions: ['Query', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'listTeams',
    method: 'GET',
    path: '/api/teams',
    entry: 'functions/teams-list.ts',
    scope: 'agents:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'createTeam',
    method: 'POST',
    path: '/api/teams',
    entry: 'functions/teams-create.ts',
    scope: 'agents:write',
    tableActions: ['Query', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'getTeam',
    method: 'GET',
    path: '/api/teams/{team}',
    entry: 'functions/teams-get.ts',
    scope: 'agents:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'updateTeam',
    method: 'PATCH',
    path: '/api/teams/{team}',
    entry: 'functions/teams-update.ts',
    scope: 'agents:write',
    tableActions: ['Query', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'deleteTeam',
    method: 'DELETE',
    path: '/api/teams/{team}',
    entry: 'functions/teams-delete.ts',
    scope: 'agents:write',
    tableActions: ['Query', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  // Imports (decisions.md, "Imports: moving a helpdesk in"; docs/imports.md, "Jobs"): PutItem (the job, the
  // account's active import and an Idempotency-Key's record in one transaction), GetItem and Query (a job, the
  // account's jobs, a job's error rows), UpdateItem (a cancel; every route's rate count); DeleteItem: releasing an
  // Idempotency-Key.
  {
    name: 'createImport',
    method: 'POST',
    path: '/api/imports',
    entry: 'functions/imports-create.ts',
    scope: 'imports:write',
    tableActions: ['PutItem', 'UpdateItem', 'DeleteItem'],
  },
  {
    name: 'listImports',
    method: 'GET',
    path: '/api/imports',
    entry: 'functions/imports-list.ts',
    scope: 'imports:read',
    tableActions: ['Query', 'UpdateItem'],
  },
  {
    name: 'getImport',
    method: 'GET',
    path: '/api/imports/{import}',
    entry: 'functions/imports-get.ts',
    scope: 'imports:read',
    tableActions: ['GetItem', 'UpdateItem'],
  },
  {
    name: 'cancelImport',
    method: 'POST',
    path: '/api/imports/{import}/cancel',
    entry: 'functions/imports-cancel.ts',
    scope: 'imports:write',
    tableActions: ['GetItem', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'undoImport',
    method: 'POST',
    path: '/api/imports/{import}/undo',
    entry: 'functions/imports-undo.ts',
    scope: 'imports:write',
    // The job and the active import (a transaction with the kept answer); the runner does the undoing.
    tableActions: ['GetItem', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
  {
    name: 'listImportErrors',
    method: 'GET',
    path: '/api/imports/{import}/errors',
    entry: 'functions/imports-errors.ts',
    scope: 'imports:read',
    tableActions: ['GetItem', 'Query', 'UpdateItem'],
  },
  // The contract (decisions.md, "Contract"): public, and away from the store.
  {
    name: 'getOpenApi',
    method: 'GET',
    path: '/api/openapi.json',
    entry: 'functions/openapi-get.ts',
    scope: PUBLIC,
    tableActions: [],
  },
  {
    name: 'docsPage',
    method: 'GET',
    path: '/docs',
    entry: 'functions/docs-page.ts',
    scope: PUBLIC,
    tableActions: [],
  },
  {
    name: 'docsAsset',
    method: 'GET',
    path: '/docs/{asset}',
    entry: 'functions/docs-asset.ts',
    scope: PUBLIC,
    tableActions: [],
    files: ['swagger-ui-dist/swagger-ui-bundle.js', 'swagger-ui-dist/swagger-ui.css'],
  },
] as const satisfies readonly RouteDeclaration[];

/** A route as declared, and what follows from it: the authorizer guards every route that has a scope. */
export interface RouteDefinition extends RouteDeclaration {
  readonly auth: boolean;
}

export const routes: readonly RouteDefinition[] = declared.map((r) => ({ ...r, auth: r.scope !== PUBLIC }));

/**
 * Whether a route's function is given the key-hash secret (lib/accounts/key-hash.ts): every write (an
 * Idempotency-Key's request fingerprint is keyed), the key routes (they hash keys), and every route that reads or
 * writes the index of tickets, deals or contacts (keys name free-text values and search terms by the account's
 * keyed hash: docs/data-model.md, "Keyed values in keys"), the trash's included. test/support/table-actions-setup.ts
 * fails a test in which a function without it takes a keyed hash.
 */
export const holdsKeyHashSecret = (route: RouteDeclaration): boolean =>
  route.scope !== PUBLIC && (route.method !== 'GET' || /^(tickets|deals|contacts|keys):/.test(route.scope));

export type RouteName = (typeof declared)[number]['name'];

/**
 * The route a handler serves, by its name in this table: a name that is not here fails the typecheck, and
 * throws when the handler module loads if the types were bypassed.
 */
export function route(name: RouteName): RouteDefinition {
  const found = routes.find((r) => r.name === name);
  if (!found) throw new Error(`functions/routes.ts has no route named "${name}"`);
  return found;
}

/**
 * The route path a request path names, and its path parameters: segment by segment as sent (API Gateway
 * resolves no `..` and keeps empty segments), `{name}` matching one non-empty segment (percent-decoded, as
 * API Gateway passes path parameters), one trailing slash allowed.
 */
export function matchPath(requestPath: string): { path: string; params: Record<string, string> } | undefined {
  const trimmed =
    requestPath.length > 1 && requestPath.endsWith('/') ? requestPath.slice(0, -1) : requestPath;
  const segments = trimmed.split('/');
  for (const path of paths) {
    const pattern = path.split('/');
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const matches = pattern.every((part, i) => {
      const segment = segments[i] ?? '';
      const name = /^\{(\w+)\}$/.exec(part)?.[1];
      if (!name) return part === segment;
      if (segment === '') return false;
      try {
        params[name] = decodeURIComponent(segment);
      } catch {
        return false;
      }
      return true;
    });
    if (matches) return { path, params };
  }
  return undefined;
}

/** Methods served on a path, for the 405 answer's Allow header. */
export function methodsOf(path: string): HttpMethod[] {
  return routes.filter((r) => r.path === path).map((r) => r.method);
}

export const paths: readonly string[] = [...new Set(routes.map((r) => r.path))];
