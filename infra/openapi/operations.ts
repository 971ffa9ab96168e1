import { basename } from 'node:path';
import * as v from 'valibot';
import { type RouteName, route } from '#functions/routes.ts';
import { CreateKeySchema, RotateKeySchema } from '#lib/accounts/key-schemas.ts';
import { ContactListQueryParams, UpdateContactSchema } from '#lib/contacts/schemas.ts';
import { EVENT_ID_PATTERN } from '#lib/data/events.ts';
import { ENDPOINT_ID_PATTERN } from '#lib/data/webhooks/endpoint-ids.ts';
import { DealListQueryParams } from '#lib/deals/list-query.ts';
import { CreateDealSchema, UpdateDealSchema } from '#lib/deals/schemas.ts';
import { InboundListQueryParams } from '#lib/email/inbound-log.ts';
import { CreateErasureSchema } from '#lib/erasures/erasures.ts';
import { EventFeedQueryParams } from '#lib/events/feed.ts';
import {
  CreateImportSchema,
  ImportErrorsQueryParams,
  ImportListQueryParams,
} from '#lib/imports/job-schemas.ts';
import {
  CreateOrganizationSchema,
  OrganizationListQueryParams,
  UpdateOrganizationSchema,
} from '#lib/organizations/schemas.ts';
import {
  AgentListQueryParams,
  CreateAgentSchema,
  CreateTeamSchema,
  TeamListQueryParams,
  UpdateAgentSchema,
  UpdateTeamSchema,
} from '#lib/people/schemas.ts';
import { BacktestSchema } from '#lib/rules/backtest.ts';
import { MacroListQueryParams, RuleListQueryParams } from '#lib/rules/list-query.ts';
import {
  CreateMacroSchema,
  CreateRuleSchema,
  UpdateMacroSchema,
  UpdateRuleSchema,
} from '#lib/rules/schemas.ts';
import { TestRulesSchema } from '#lib/rules/test-rules.ts';
import { ApplyMacroQueryParams } from '#lib/tickets/apply-macro.ts';
import { ListQueryParams } from '#lib/tickets/list-query.ts';
import { MESSAGE_ID_PATTERN } from '#lib/tickets/messages/message.ts';
import { CreateMessageSchema } from '#lib/tickets/messages/post-rules.ts';
import { MessageListQueryParams } from '#lib/tickets/messages/read.ts';
import { CreateTicketSchema, UpdateTicketSchema } from '#lib/tickets/schemas.ts';
import { TrashQueryParams } from '#lib/trash/list.ts';
import {
  CreateEndpointSchema,
  DeliveryListQueryParams,
  RedeliverSchema,
  UpdateEndpointSchema,
} from '#lib/webhooks/schemas.ts';
import type { OperationExceptions } from './exception-kinds.ts';
import {
  AgentPage,
  ApiKeyCreated,
  ApiKeyList,
  ApiKeyRevoked,
  ContactDeleted,
  ContactPage,
  ContactUpdated,
  DealCreated,
  DealDeleted,
  DealPage,
  DealUpdated,
  ErasureAnswer,
  EventFeed,
  ImportErrorPage,
  ImportPage,
  InboundMailPage,
  MacroApplied,
  MacroPage,
  MessageCreated,
  MessagePage,
  OneAgent,
  OneContact,
  OneDeal,
  OneEvent,
  OneImport,
  OneMacro,
  OneMessage,
  OneOrganization,
  OneRule,
  OneTeam,
  OneTicket,
  OneWebhook,
  OrganizationPage,
  PipelineBoard,
  PipelineList,
  Restored,
  RuleBacktestResult,
  RulePage,
  RuleTestResult,
  StartedImport,
  TeamPage,
  TicketCreated,
  TicketDeleted,
  TicketPage,
  TicketUpdated,
  TrashPage,
  UndoingImport,
  WebhookCreated,
  WebhookDeleted,
  WebhookDeliveryAttemptPage,
  WebhookList,
  WebhookRedelivery,
  WebhookSecretRotated,
  WebhookUpdated,
} from './schemas.ts';

/**
 * What the OpenAPI document says of each route of the route table beyond its method, path and auth: typed by
 * route name, so a route added to functions/routes.ts without its entry here fails the typecheck. Request
 * schemas are the ones the handlers validate with; statuses every route shares (auth, rate limit, body,
 * idempotency, store faults) are added by document.ts from the route itself.
 */
export interface Operation {
  readonly summary: string;
  readonly description?: string;
  readonly tag:
    | 'Tickets'
    | 'Deals'
    | 'Contacts'
    | 'Organizations'
    | 'Rules'
    | 'Pipelines'
    | 'Agents'
    | 'Teams'
    | 'Trash'
    | 'Erasures'
    | 'Imports'
    | 'Events'
    | 'Webhooks'
    | 'Keys'
    | 'E-mail'
    | 'Contract';
  /** The JSON body's schema (routes with a body). */
  readonly body?: v.GenericSchema;
  /** An object schema whose entries are the query parameters, each carrying its wire form. */
  readonly query?: v.ObjectSchema<v.ObjectEntries, undefined>;
  /** Path parameters: name → description, and the schema of the values that can name something. */
  readonly pathParams?: Readonly<
    Record<string, { readonly description: string; readonly schema: v.GenericSchema }>
  >;
  /** The answer on success. */
  readonly ok: {
    readonly status: 200 | 201 | 202;
    readonly description: string;
    /** A JSON body's schema, or the content types of a body that is not an API object. */
    readonly body: v.GenericSchema | { readonly contentTypes: readonly string[] };
    /** Answers an ETag (the ticket's version). */
    readonly etag?: boolean;
    /** Shows a secret, so says Cache-Control: no-store. */
    readonly noStore?: boolean;
    /** A file (raw mail, an attachment): Content-Disposition names it; deployed, a large one is a 303. */
    readonly download?: boolean;
  };
  /**
   * A list of the index engine, bounded by its read budget: its 422 also answers a search word that matches too
   * much or a page too deep (docs/decisions.md, "Bounded work per list").
   */
  readonly readBudget?: boolean;
  /** Statuses of this route's own (404, 412), besides the shared ones. */
  readonly statuses?: readonly (404 | 412)[];
  /** The route's own 409 besides the Idempotency-Key's (no Retry-After: sending it again does not help). */
  readonly conflict?: string;
  /** The route's own 409 that sending it again resolves (with Retry-After, as the Idempotency-Key's). */
  readonly retriedConflict?: string;
  /** Request headers of this route's own. */
  readonly ifMatch?: boolean;
  /** Body fields and query parameters the Spectral lint leaves alone, by kind (./exception-kinds.ts says why). */
  readonly exceptions?: OperationExceptions;
}

/**
 * What can name a ticket (lib/tickets/get-ticket.ts, findTicket): a uuid or a reference, in any case. Anything
 * else names nothing and is answered 404, as an unknown ticket is.
 */
const TICKET_PARAM = {
  ticket: {
    description: "The ticket's uuid or its reference (TKT-000042), in any case.",
    schema: v.pipe(
      v.string(),
      v.maxLength(36),
      v.regex(
        /^([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}|[A-Za-z]{2,10}-\d{1,15})$/,
      ),
    ),
  },
};

/** A uuid, in any case: anything else names nothing and is answered 404, as an unknown one is. */
const MESSAGE_PARAM = {
  description: "The message's id (`msg_…`).",
  schema: v.pipe(v.string(), v.maxLength(30), v.regex(MESSAGE_ID_PATTERN)),
};

const uuidParam = (name: string, description: string) => ({
  [name]: {
    description,
    schema: v.pipe(
      v.string(),
      v.maxLength(36),
      v.regex(/^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/),
    ),
  },
});
const DEAL_PARAM = uuidParam('deal', "The deal's uuid.");
const CONTACT_PARAM = uuidParam('contact', "The contact's uuid.");
const ORGANIZATION_PARAM = {
  organization: {
    description: "The organization's id.",
    schema: v.pipe(v.string(), v.maxLength(15), v.regex(/^[1-9]\d{0,14}$/)),
  },
};
const EVENT_PARAM = {
  event: {
    description: "The event's id (`evt_…`).",
    schema: v.pipe(v.string(), v.maxLength(24), v.regex(EVENT_ID_PATTERN)),
  },
};

const WEBHOOK_PARAM = {
  webhook: {
    description: "The webhook endpoint's id (`we_…`).",
    schema: v.pipe(v.string(), v.maxLength(27), v.regex(ENDPOINT_ID_PATTERN)),
  },
};

const ERASURE_PARAM = {
  erasure: {
    description: "The erasure's id (`ers_…`).",
    schema: v.pipe(v.string(), v.maxLength(27), v.regex(/^ers_\d{13}[0-9a-f]{10}$/)),
  },
};

const IMPORT_PARAM = {
  import: {
    description: "The import's id (`imp_…`).",
    schema: v.pipe(v.string(), v.maxLength(27), v.regex(/^imp_\d{13}[0-9a-f]{10}$/)),
  },
};

const idParam = (name: string, description: string) => ({
  [name]: { description, schema: v.pipe(v.string(), v.maxLength(15), v.regex(/^\d{1,15}$/)) },
});
const AGENT_PARAM = idParam('agent', "The agent's id.");
const RULE_PARAM = idParam('rule', "The rule's id.");
const MACRO_PARAM = idParam('macro', "The macro's id.");
const TEAM_PARAM = idParam('team', "The team's id.");

const KEY_PARAM = {
  key: {
    description: "The API key's id (`key_…`).",
    schema: v.pipe(v.string(), v.maxLength(20), v.regex(/^key_[0-9a-f]{16}$/)),
  },
};

/** The docs page's files, by the name in the path (functions/docs-asset.ts serves these and 404s any other). */
const DOCS_ASSETS = (route('docsAsset').files ?? []).map((file) => basename(file));

export const operations: Record<RouteName, Operation> = {
  listPipelines: {
    summary: 'List pipelines',
    description: "The account's active pipelines by id, each with its stages by position.",
    tag: 'Pipelines',
    ok: { status: 200, description: 'The active pipelines.', body: PipelineList },
  },
  createTicket: {
    summary: 'Create a ticket',
    description:
      'Creates a ticket with its reference, service-level due date, team routing and automatic assignment.',
    tag: 'Tickets',
    body: CreateTicketSchema,
    ok: { status: 201, description: 'The ticket, as stored.', body: TicketCreated },
    exceptions: { freeText: ['subject', 'description', 'requester_name', 'category_slug', 'custom_fields'] },
    retriedConflict:
      "the team of the ticket's category was deleted while the ticket was being created (`The team of the " +
      "ticket's category was deleted while the ticket was being created: send it again.`).",
  },
  listTickets: {
    summary: 'List tickets',
    description:
      'Newest first, filtered (every filter narrows), searched by subject words or reference, paginated.',
    tag: 'Tickets',
    readBudget: true,
    query: ListQueryParams,
    ok: { status: 200, description: 'One page of tickets and the exact total.', body: TicketPage },
    exceptions: {
      // requester_email is an exact match, not checked as an address.
      freeText: ['requester_email', 'search', 'custom_fields'],
      accountScopedId: ['assignee_id', 'team_id', 'organization_id'],
    },
  },
  getTicket: {
    summary: 'Get a ticket',
    tag: 'Tickets',
    pathParams: TICKET_PARAM,
    ok: { status: 200, description: 'The ticket and its version.', body: OneTicket, etag: true },
    statuses: [404],
  },
  updateTicket: {
    summary: 'Update a ticket',
    description:
      'Changes only the fields sent. Closed is final; reopening clears resolved_at; a priority or category ' +
      'change recomputes due_at. A PATCH that changes nothing writes nothing.',
    tag: 'Tickets',
    pathParams: TICKET_PARAM,
    body: UpdateTicketSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The ticket after the change.', body: TicketUpdated, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['subject', 'description', 'category_slug', 'custom_fields', 'tags'] },
  },
  deleteTicket: {
    summary: 'Delete a ticket',
    description:
      'Moves the ticket to the trash: it leaves every list, filter, total, search, queue and count in the same ' +
      'transaction, and GET, PATCH and messages answer 404. POST /api/trash/{uuid}/restore puts it back exactly ' +
      'as it was until purge_at, when it and its messages are purged for good. Writes ticket.deleted.',
    tag: 'Tickets',
    pathParams: TICKET_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The ticket is in the trash.', body: TicketDeleted },
    statuses: [404, 412],
  },
  createMessage: {
    summary: 'Add a message to a ticket',
    description:
      'A public reply, an internal note, or a requester message (through an integration). It commits with the ' +
      "ticket's change (status, last_message_at, waiting_since, updated_at) and the events message.created and " +
      "ticket.updated. A requester's message reopens a pending or resolved ticket; on a closed ticket it opens a " +
      'follow-up ticket (parent_uuid), answered as `ticket`. If-Match: of two agents answering one version, the ' +
      'second gets 412.',
    tag: 'Tickets',
    pathParams: TICKET_PARAM,
    body: CreateMessageSchema,
    ifMatch: true,
    ok: {
      status: 201,
      description: 'The message, and the ticket after it (or the follow-up it opened).',
      body: MessageCreated,
      etag: true,
    },
    statuses: [404, 412],
    exceptions: { freeText: ['body'], accountScopedId: ['agent_id'] },
  },
  applyMacro: {
    summary: 'Apply a macro to a ticket',
    description:
      "The macro's actions in order, then the account's `updated` rules (`via: macro`), in one change committed " +
      'with its messages and events as a PATCH is (ticket.updated with `data.rules`, a message.created per note ' +
      'or reply). Answers as a PATCH does. `?dry_run=true` writes nothing: the ticket as it would be, with ' +
      '`dry_run` (the changes, messages and mail it would write, the rules as rules/test shows them, the actions ' +
      'that would not apply) and the ETag of the ticket as it is. A closed ticket is a 422; an unknown macro a 404.',
    tag: 'Tickets',
    pathParams: { ...TICKET_PARAM, ...MACRO_PARAM },
    query: ApplyMacroQueryParams,
    ifMatch: true,
    ok: {
      status: 200,
      description: 'The ticket after the macro (or, dry, as it would be).',
      body: MacroApplied,
      etag: true,
    },
    statuses: [404, 412],
  },
  listMessages: {
    summary: "List a ticket's messages",
    description:
      'The conversation oldest first, the description first of all; `limit` bounds the messages examined (a page ' +
      'filtered by `visibility` may hold fewer). Follow `next_cursor` until it is null. A page costs the same ' +
      'whatever the conversation length.',
    tag: 'Tickets',
    pathParams: TICKET_PARAM,
    query: MessageListQueryParams,
    ok: { status: 200, description: 'Messages after the cursor, and the next cursor.', body: MessagePage },
    statuses: [404],
  },
  getMessage: {
    summary: 'Get a message',
    tag: 'Tickets',
    pathParams: {
      ...TICKET_PARAM,
      message: {
        description: "The message's id (`msg_…`).",
        schema: v.pipe(v.string(), v.maxLength(30), v.regex(MESSAGE_ID_PATTERN)),
      },
    },
    ok: { status: 200, description: 'The message.', body: OneMessage },
    statuses: [404],
  },
  getMessageRaw: {
    summary: "Get a message's raw mail",
    description:
      'The mail an e-mail message came from, byte for byte as received (trace headers included), as ' +
      '`message/rfc822`. Raw mail is kept 30 days (less when the ticket is deleted and purged, or the person ' +
      'erased); then, and for a message that did not come by e-mail, 404.',
    tag: 'Tickets',
    pathParams: { ...TICKET_PARAM, message: MESSAGE_PARAM },
    ok: {
      status: 200,
      description: 'The raw mail.',
      body: { contentTypes: ['message/rfc822'] },
      noStore: true,
      download: true,
    },
    statuses: [404],
  },
  getMessageAttachment: {
    summary: "Download a message's attachment",
    description:
      'One attachment of an e-mail message (its `attachments[].id`), as `application/octet-stream` with its ' +
      'file name; its type is in the message. Kept as long as the raw mail (30 days), then 404.',
    tag: 'Tickets',
    pathParams: {
      ...TICKET_PARAM,
      message: MESSAGE_PARAM,
      attachment: {
        description: "The attachment's id (`attachments[].id` of the message).",
        schema: v.pipe(v.string(), v.maxLength(16), v.regex(/^att_\d{4,11}$/)),
      },
    },
    ok: {
      status: 200,
      description: "The attachment's bytes.",
      body: { contentTypes: ['application/octet-stream'] },
      noStore: true,
      download: true,
    },
    statuses: [404],
  },
  listInboundMail: {
    summary: 'List received mail',
    description:
      'Every mail the account received, newest first, with its outcome (`threaded`, `new_ticket`, `follow_up`, ' +
      "`duplicate`, `automatic`, `bounce`, `rejected`, `suspended`: an agent's address that did not authenticate, " +
      'nothing written), the reason and the ticket and message it went to. Follow `next_cursor` until it is null.',
    tag: 'E-mail',
    query: InboundListQueryParams,
    ok: {
      status: 200,
      description: 'Received mail after the cursor, and the next cursor.',
      body: InboundMailPage,
    },
  },
  createDeal: {
    summary: 'Create a deal',
    description:
      "Creates a deal in a pipeline's stage, finding its contact by e-mail or creating it (one per e-mail).",
    tag: 'Deals',
    body: CreateDealSchema,
    ok: { status: 201, description: 'The deal, as stored.', body: DealCreated },
    exceptions: {
      freeText: ['name', 'contact_first_name', 'contact_last_name', 'contact_phone'],
    },
  },
  listDeals: {
    summary: 'List deals',
    description:
      'Newest first, filtered (every filter narrows), searched by words of the deal name and of its contact, paginated.',
    tag: 'Deals',
    readBudget: true,
    query: DealListQueryParams,
    ok: { status: 200, description: 'One page of deals and the exact total.', body: DealPage },
    exceptions: {
      // contact_email is an exact match, not checked as an address.
      freeText: ['contact_email', 'search'],
      accountScopedId: ['pipeline_id', 'stage_id'],
    },
  },
  getDeal: {
    summary: 'Get a deal',
    tag: 'Deals',
    pathParams: DEAL_PARAM,
    ok: {
      status: 200,
      description: 'The deal, its contact as it is now, and its version.',
      body: OneDeal,
      etag: true,
    },
    statuses: [404],
  },
  updateDeal: {
    summary: 'Update a deal',
    description:
      'Moves it to a stage, wins, loses or reopens it, or changes its name, amount, currency or expected close ' +
      'date. Probability follows the stage while open (100 won, 0 lost). A PATCH that changes nothing writes nothing.',
    tag: 'Deals',
    pathParams: DEAL_PARAM,
    body: UpdateDealSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The deal after the change.', body: DealUpdated, etag: true },
    statuses: [404, 412],
    exceptions: {
      freeText: ['name', 'lost_reason'],
    },
  },
  deleteDeal: {
    summary: 'Delete a deal',
    description:
      "Moves the deal to the trash: it leaves every list, total, search, board sum and its contact's " +
      'open_deals_count in the same transaction; GET and PATCH answer 404. Restorable until purge_at while its ' +
      'contact is not in the trash. Writes deal.deleted.',
    tag: 'Deals',
    pathParams: DEAL_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The deal is in the trash.', body: DealDeleted },
    statuses: [404, 412],
  },
  getPipelineBoard: {
    summary: "A pipeline's board",
    description:
      'Per stage its open deals: count, and per currency the exact amount and weighted amount; the won and lost deals.',
    tag: 'Pipelines',
    pathParams: {
      pipeline: {
        description: "The pipeline's id.",
        schema: v.pipe(v.string(), v.maxLength(10), v.regex(/^\d{1,10}$/)),
      },
    },
    ok: { status: 200, description: 'The board.', body: PipelineBoard },
    statuses: [404],
  },
  listContacts: {
    summary: 'List contacts',
    description: 'Newest first, filtered by e-mail, searched by words of name and e-mail, paginated.',
    tag: 'Contacts',
    readBudget: true,
    query: ContactListQueryParams,
    ok: { status: 200, description: 'One page of contacts and the exact total.', body: ContactPage },
    // email is an exact match, not checked as an address.
    exceptions: { freeText: ['email', 'search'] },
  },
  getContact: {
    summary: 'Get a contact',
    tag: 'Contacts',
    pathParams: CONTACT_PARAM,
    ok: {
      status: 200,
      description: 'The contact, its open deals, and its version.',
      body: OneContact,
      etag: true,
    },
    statuses: [404],
  },
  updateContact: {
    summary: 'Update a contact',
    description:
      'Changes name, phone or e-mail (which must be free in the account). Its deals show it as it is now.',
    tag: 'Contacts',
    pathParams: CONTACT_PARAM,
    body: UpdateContactSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The contact after the change.', body: ContactUpdated, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['first_name', 'last_name', 'phone'] },
  },
  deleteContact: {
    summary: 'Delete a contact',
    description:
      'Moves the contact to the trash (its e-mail is free again). A contact that still has deals (open, won or ' +
      'lost, not in the trash) is a 409 naming how many. Writes contact.deleted.',
    tag: 'Contacts',
    pathParams: CONTACT_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The contact is in the trash.', body: ContactDeleted },
    statuses: [404, 412],
    conflict: 'the contact still has deals (`The contact has <n> deals: delete or move them first.`).',
  },
  listOrganizations: {
    summary: 'List organizations',
    description:
      "The account's organizations by id, after `after` (an organization's id), `limit` at a time (1 to 100, 50 " +
      'by default): follow `next_cursor` until it is null. With `domain`, the one organization holding that ' +
      'domain (in either form of an internationalized one), or none.',
    tag: 'Organizations',
    query: OrganizationListQueryParams,
    ok: {
      status: 200,
      description: 'Organizations after the cursor, and the next cursor.',
      body: OrganizationPage,
    },
  },
  createOrganization: {
    summary: 'Create an organization',
    description:
      "A customer's company. Its name (compared case-insensitively) and each of its domains belong to one " +
      'organization of the account: another\'s is a 422 ("has already been taken"), also when two requests race. ' +
      'Free-mail and disposable domains are refused (422 on `domains`). Writes organization.created.',
    tag: 'Organizations',
    body: CreateOrganizationSchema,
    ok: { status: 201, description: 'The organization, as stored.', body: OneOrganization },
    exceptions: { freeText: ['name', 'external_id'] },
  },
  getOrganization: {
    summary: 'Get an organization',
    tag: 'Organizations',
    pathParams: ORGANIZATION_PARAM,
    ok: { status: 200, description: 'The organization and its version.', body: OneOrganization, etag: true },
    statuses: [404],
  },
  updateOrganization: {
    summary: 'Update an organization',
    description:
      'Changes only the fields sent; `domains` replaces the list (a domain dropped is free at once), with the ' +
      "create's rules. A PATCH that changes nothing writes nothing. Writes organization.updated.",
    tag: 'Organizations',
    pathParams: ORGANIZATION_PARAM,
    body: UpdateOrganizationSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The organization after the change.', body: OneOrganization, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['name', 'external_id'] },
  },
  deleteOrganization: {
    summary: 'Delete an organization',
    description:
      'Removes it for good (no trash): its name and domains are free at once; its id is never given again. ' +
      'Writes organization.deleted.',
    tag: 'Organizations',
    pathParams: ORGANIZATION_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The organization as it was.', body: OneOrganization },
    statuses: [404, 412],
  },
  listRules: {
    summary: 'List rules',
    description:
      "The account's rules in the order they run: by `position`, ties by id. `after` is a `next_cursor` (the last " +
      "rule's `<position>.<id>`), `limit` 1 to 100 (50 by default): follow `next_cursor` until it is null.",
    tag: 'Rules',
    query: RuleListQueryParams,
    ok: { status: 200, description: 'Rules after the cursor, and the next cursor.', body: RulePage },
  },
  createRule: {
    summary: 'Create a rule',
    description:
      'A trigger (`on`: created, updated, message) or a time rule (`on: time`, with `time`). Every problem is a 422 ' +
      'on its exact path (`conditions.all.0.value`, `actions.2.body`): an unknown field, op, value, team, agent, ' +
      'category, organization or placeholder, more than 50 conditions or 20 actions, and the 1,001st active rule ' +
      '(on `active`). Without `position` it goes last. Applies to changes that start more than 5 seconds after it ' +
      'answered. Writes rule.created.',
    tag: 'Rules',
    body: CreateRuleSchema,
    ok: { status: 201, description: 'The rule, as stored.', body: OneRule },
    exceptions: { freeText: ['name', 'conditions', 'actions'] },
  },
  testRules: {
    summary: 'Test rules on a ticket',
    description:
      "Runs the account's active rules (or the draft `rules` sent) on a ticket and a change (`change`: a PATCH " +
      'body) or a message (`message`), with the evaluator the real change uses, and writes nothing. Answers what ' +
      "fired with the conditions that held, what did not with its first failing condition and the ticket's value " +
      '(`actual`), the ticket as it would be, and the messages and mail it would add. An unknown ticket is a 404.',
    tag: 'Rules',
    body: TestRulesSchema,
    ok: { status: 200, description: 'What the change would do.', body: RuleTestResult },
    exceptions: { freeText: ['message', 'change', 'rules'] },
    statuses: [404],
  },
  backtestRule: {
    summary: 'Backtest a rule',
    description:
      'What the saved rule would have done over the changes of a window of the last 30 days (`from`, `to`: now when ' +
      'left out), read from the events feed; writes nothing. Reads a bounded part of the window a call (`limit` feed ' +
      'items, 5,000 at most); `next_cursor`, sent back as `after` with the same window, reads on. The conditions are ' +
      'looked at by the evaluator a change runs, on each ticket as its event shows it (docs/rules.md, "Backtest").',
    tag: 'Rules',
    pathParams: RULE_PARAM,
    body: BacktestSchema,
    ok: { status: 200, description: 'What the rule would have done.', body: RuleBacktestResult },
    statuses: [404],
  },
  getRule: {
    summary: 'Get a rule',
    tag: 'Rules',
    pathParams: RULE_PARAM,
    ok: { status: 200, description: 'The rule and its version.', body: OneRule, etag: true },
    statuses: [404],
  },
  updateRule: {
    summary: 'Update a rule',
    description:
      "Each field sent replaces the rule's (`conditions` and `actions` whole; `time: null` removes it), and the " +
      'rule that results is checked as a create is. A PATCH that changes nothing writes nothing. Writes rule.updated.',
    tag: 'Rules',
    pathParams: RULE_PARAM,
    body: UpdateRuleSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The rule after the change.', body: OneRule, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['name', 'conditions', 'actions'] },
  },
  deleteRule: {
    summary: 'Delete a rule',
    description: 'Removes it for good; its id is never given again. Writes rule.deleted.',
    tag: 'Rules',
    pathParams: RULE_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The rule as it was.', body: OneRule },
    statuses: [404, 412],
  },
  listMacros: {
    summary: 'List macros',
    description:
      "The account's macros by id, after `after` (a macro's id), `limit` at a time (1 to 100, 50 by default).",
    tag: 'Rules',
    query: MacroListQueryParams,
    ok: { status: 200, description: 'Macros after the cursor, and the next cursor.', body: MacroPage },
  },
  createMacro: {
    summary: 'Create a macro',
    description:
      "Actions an agent applies to a ticket in one change (the same actions as rules', checked the same way). " +
      'Writes macro.created.',
    tag: 'Rules',
    body: CreateMacroSchema,
    ok: { status: 201, description: 'The macro, as stored.', body: OneMacro },
    exceptions: { freeText: ['name', 'actions'] },
  },
  getMacro: {
    summary: 'Get a macro',
    tag: 'Rules',
    pathParams: MACRO_PARAM,
    ok: { status: 200, description: 'The macro and its version.', body: OneMacro, etag: true },
    statuses: [404],
  },
  updateMacro: {
    summary: 'Update a macro',
    description: '`name`, and `actions` (the list replaced). Writes macro.updated.',
    tag: 'Rules',
    pathParams: MACRO_PARAM,
    body: UpdateMacroSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The macro after the change.', body: OneMacro, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['name', 'actions'] },
  },
  deleteMacro: {
    summary: 'Delete a macro',
    description: 'Removes it for good. Writes macro.deleted.',
    tag: 'Rules',
    pathParams: MACRO_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The macro as it was.', body: OneMacro },
    statuses: [404, 412],
  },
  listTrash: {
    summary: 'List the trash',
    description:
      'What was deleted and not yet purged, newest deletion first, with a cursor. Needs `<type>:read` of each ' +
      'type shown: the one `type` names, or all three without it. A deletion appears here within about a second ' +
      '(the list is an index the deletion writes).',
    tag: 'Trash',
    query: TrashQueryParams,
    ok: { status: 200, description: 'One page of the trash.', body: TrashPage },
  },
  restoreTrash: {
    summary: 'Restore from the trash',
    description:
      'Puts the object back exactly as it was, counts and sums included, in one transaction, and writes ' +
      "`<type>.restored`. Needs `<type>:write` of the object's type. 404 when it is not in the trash (never " +
      'deleted, restored already, or purged); 409 for a deal whose contact is in the trash, or a contact whose ' +
      'e-mail another contact took meanwhile.',
    tag: 'Trash',
    pathParams: uuidParam('uuid', "The deleted object's uuid."),
    ok: { status: 200, description: 'The object as its GET answers it.', body: Restored, etag: true },
    statuses: [404],
    conflict:
      'a deal whose contact is in the trash, or a contact whose e-mail another contact took meanwhile.',
  },
  createErasure: {
    summary: 'Erase a person',
    description:
      'Starts the erasure of everything the account holds about the person with this e-mail address (GDPR ' +
      'article 17): their contact, their name, e-mail and phone on every ticket they requested, what they wrote, ' +
      "their deals' contact, every event, kept idempotent answer, inbound mail entry and search term holding " +
      'them; then `contact.erased`. Runs in the background: follow it with `GET /api/erasures/{erasure}`. An ' +
      'address the account does not know is accepted too and completes with zero counts. The erasure keeps only ' +
      'a keyed hash of the address.',
    tag: 'Erasures',
    body: CreateErasureSchema,
    ok: { status: 202, description: 'The erasure, started.', body: ErasureAnswer },
  },
  getErasure: {
    summary: 'Get an erasure',
    description:
      "An erasure's status and, once completed, how many items of each store it changed or removed.",
    tag: 'Erasures',
    pathParams: ERASURE_PARAM,
    ok: { status: 200, description: 'The erasure.', body: ErasureAnswer },
    statuses: [404],
  },
  createImport: {
    summary: 'Start an import',
    description:
      "Starts moving a helpdesk in (Zendesk, Freshdesk, or a file in the ndjson line format): the account's one " +
      'import at a time (a second is a 409 while one has not ended). `mode: validate` reads everything and writes ' +
      'nothing but the job; `since` reads only what changed since then; `rate_share` (0.1 to 1, 0.5 by default) ' +
      "is the share of the source's rate limit used. The credentials are kept encrypted only while the import " +
      'runs and never answered. An ndjson import answers `upload_url`: PUT the file there, and it starts. Follow ' +
      'it with `GET /api/imports/{import}`.',
    tag: 'Imports',
    body: CreateImportSchema,
    ok: { status: 202, description: 'The import, queued.', body: StartedImport },
    // The source's secrets: whatever characters the vendor issues, kept sealed and never shown.
    exceptions: { freeText: ['api_token', 'api_key'] },
    conflict: 'another import of the account has not ended.',
  },
  listImports: {
    summary: 'List imports',
    description: "The account's imports, newest first, `limit` at a time (1 to 100, 20 by default).",
    tag: 'Imports',
    query: ImportListQueryParams,
    ok: { status: 200, description: 'Imports older than the cursor, and the next cursor.', body: ImportPage },
  },
  getImport: {
    summary: 'Get an import',
    description: "An import's status, phase, progress (in tickets) and counts by type.",
    tag: 'Imports',
    pathParams: IMPORT_PARAM,
    ok: { status: 200, description: 'The import.', body: OneImport },
    statuses: [404],
  },
  cancelImport: {
    summary: 'Cancel an import',
    description: 'The import stops at its next checkpoint (`cancelled`); what it imported stays.',
    tag: 'Imports',
    pathParams: IMPORT_PARAM,
    ok: { status: 202, description: 'The import, asked to stop.', body: OneImport },
    statuses: [404],
    conflict: 'the import has ended.',
  },
  undoImport: {
    summary: 'Undo an import',
    description:
      'Takes out exactly what the ended import created, in the background (`undoing`, then `undone`): its ' +
      'tickets and contacts go to the trash (restorable as any deletion), its teams and organizations are ' +
      'deleted, its agents retired. What it only updated (an agent or contact matched by e-mail, a team by name) ' +
      'keeps the update. What is gone already is skipped; what cannot be taken out (a contact with deals, a team ' +
      "still routing a category) is kept with an error row. The deletions' events carry `import_id`, so webhook " +
      "endpoints receive none of them. The account's one import while it runs.",
    tag: 'Imports',
    pathParams: IMPORT_PARAM,
    ok: {
      status: 202,
      description: 'The import, being undone.',
      body: UndoingImport,
    },
    statuses: [404],
    conflict:
      'the import has not ended (queued, running, paused), is being or has been undone, was a validate run, or ' +
      'another import of the account has not ended.',
  },
  listImportErrors: {
    summary: "List an import's error rows",
    description:
      'What could not be imported, and why, in the order found, `limit` at a time (1 to 100, 50 by default).',
    tag: 'Imports',
    pathParams: IMPORT_PARAM,
    query: ImportErrorsQueryParams,
    ok: {
      status: 200,
      description: 'Error rows after the cursor, and the next cursor.',
      body: ImportErrorPage,
    },
    statuses: [404],
  },
  listEvents: {
    summary: 'List events',
    description:
      "The account's events after `after`, oldest first, each written with the change it describes. `limit` " +
      'bounds the events examined: a page filtered by `type` may hold fewer. Follow `next_cursor` until it is ' +
      'null; then poll with the same `after`. Events are kept 30 days.',
    tag: 'Events',
    query: EventFeedQueryParams,
    ok: {
      status: 200,
      description: 'Events after the cursor, and the cursor to read after next.',
      body: EventFeed,
    },
  },
  getEvent: {
    summary: 'Get an event',
    tag: 'Events',
    pathParams: EVENT_PARAM,
    ok: { status: 200, description: 'The event.', body: OneEvent },
    statuses: [404],
  },
  createWebhook: {
    summary: 'Register a webhook endpoint',
    description:
      'Events of the types listed are POSTed to the URL, signed as Standard Webhooks. The URL must be https and ' +
      'reach a public address (http://127.0.0.1:<port> and http://localhost:<port> too on the local stage). ' +
      'At most 20 endpoints an account. The answer holds the signing secret: the only one that shows it.',
    tag: 'Webhooks',
    body: CreateEndpointSchema,
    ok: {
      status: 201,
      description: 'The endpoint, with its signing secret.',
      body: WebhookCreated,
      noStore: true,
    },
    exceptions: { freeText: ['description'] },
  },
  listWebhooks: {
    summary: 'List webhook endpoints',
    description: "The account's endpoints (at most 20), oldest first, without their secrets.",
    tag: 'Webhooks',
    ok: { status: 200, description: 'Every endpoint of the account.', body: WebhookList },
  },
  getWebhook: {
    summary: 'Get a webhook endpoint',
    tag: 'Webhooks',
    pathParams: WEBHOOK_PARAM,
    ok: { status: 200, description: 'The endpoint, without its secrets.', body: OneWebhook },
    statuses: [404],
  },
  updateWebhook: {
    summary: 'Update a webhook endpoint',
    description:
      'Changes its URL (checked as on registration), event types, description, or whether it is enabled; ' +
      'enabling it clears disabled_reason. A PATCH that changes nothing writes nothing.',
    tag: 'Webhooks',
    pathParams: WEBHOOK_PARAM,
    body: UpdateEndpointSchema,
    ok: { status: 200, description: 'The endpoint after the change.', body: WebhookUpdated },
    statuses: [404],
    exceptions: { freeText: ['description'] },
  },
  deleteWebhook: {
    summary: 'Delete a webhook endpoint',
    description: 'It gets no more deliveries, pending ones included.',
    tag: 'Webhooks',
    pathParams: WEBHOOK_PARAM,
    ok: { status: 200, description: 'Deleted.', body: WebhookDeleted },
    statuses: [404],
  },
  rotateWebhookSecret: {
    summary: "Rotate a webhook endpoint's secret",
    description:
      'A new signing secret, shown in this answer only. The previous one keeps signing beside it for 24 hours ' +
      '(webhook-signature carries one entry per live secret), so receivers can switch without missing a delivery.',
    tag: 'Webhooks',
    pathParams: WEBHOOK_PARAM,
    ok: { status: 200, description: 'The new secret.', body: WebhookSecretRotated, noStore: true },
    statuses: [404],
  },
  listWebhookDeliveries: {
    summary: "A webhook endpoint's deliveries",
    description:
      'Every attempt to deliver an event to the endpoint (the newest 10,000), newest first, paginated as tickets: ' +
      'the answer status or what failed, the duration, and when it is tried next.',
    tag: 'Webhooks',
    pathParams: WEBHOOK_PARAM,
    query: DeliveryListQueryParams,
    ok: {
      status: 200,
      description: 'One page of attempts and the exact total.',
      body: WebhookDeliveryAttemptPage,
    },
    statuses: [404],
  },
  redeliverWebhook: {
    summary: 'Send events to a webhook endpoint again',
    description:
      '`event_id`: that event (of this account, kept 30 days); or `since`: every kept event since then of a type ' +
      'the endpoint receives (at most 1,000, the oldest first). Each is sent again with its webhook-id unchanged, ' +
      'on a new round of the retry schedule; one still pending is left to its schedule. The endpoint must be enabled.',
    tag: 'Webhooks',
    pathParams: WEBHOOK_PARAM,
    body: RedeliverSchema,
    ok: { status: 202, description: 'The events will be sent again.', body: WebhookRedelivery },
    statuses: [404],
  },
  createApiKey: {
    summary: 'Create an API key',
    description:
      'A key with a name, scopes the calling key holds itself (a `:write` counts as its `:read`; anything more ' +
      "is a 403) and an optional expiry, no later than the calling key's own when it has one (else a 422 on " +
      '`expires_at`). At most 100 live keys an account (the 101st is a 422). The answer is the only one that ' +
      'shows the key. Every key route checks the calling key as stored: a key revoked, rotated out or expired ' +
      'is a 401 here at once, even within the authorizer cache time.',
    tag: 'Keys',
    body: CreateKeySchema,
    ok: { status: 201, description: 'The key, with its secret.', body: ApiKeyCreated, noStore: true },
    exceptions: { freeText: ['name'] },
  },
  listApiKeys: {
    summary: 'List API keys',
    description: "The account's keys, revoked and expired ones too, oldest first; never a secret.",
    tag: 'Keys',
    ok: { status: 200, description: 'The keys.', body: ApiKeyList },
  },
  revokeApiKey: {
    summary: 'Revoke an API key',
    description:
      'The key stops working within the authorizer cache time (30 s). Any key may be revoked, the calling one ' +
      'and the last key with keys:manage included (the admin command line then makes the next one).',
    tag: 'Keys',
    pathParams: KEY_PARAM,
    ok: { status: 200, description: 'The key, revoked.', body: ApiKeyRevoked },
    statuses: [404],
  },
  rotateApiKey: {
    summary: 'Rotate an API key',
    description:
      'A new key with the same name and scopes, expiring when the old one would have (never, for a key that ' +
      'never expires), whatever the overlap; the old one keeps working for `expire_old_in_seconds` more (0 to ' +
      '604800), so clients can switch without an outage. A key rotates once. A revoked or expired key is a ' +
      "404; a 422 on `expires_at` when the new key would outlive the calling key's expiry.",
    tag: 'Keys',
    pathParams: KEY_PARAM,
    body: RotateKeySchema,
    ok: { status: 201, description: 'The new key, with its secret.', body: ApiKeyCreated, noStore: true },
    statuses: [404],
    conflict:
      'the key was rotated already (`This key has already been rotated (to <id>): rotate that one.`); the same ' +
      'Idempotency-Key as the rotation answers its 201 again.',
  },
  listAgents: {
    summary: 'List agents',
    description:
      "The account's agents by id, from a cursor (`after`, an agent's id), filtered by team, `active` and " +
      '`status` (an away or offline agent whose `status_until` has passed is available). Each with its open ' +
      'tickets, exact.',
    tag: 'Agents',
    query: AgentListQueryParams,
    ok: { status: 200, description: 'One page of agents and the cursor of the next.', body: AgentPage },
    exceptions: { accountScopedId: ['team_id'] },
  },
  createAgent: {
    summary: 'Create an agent',
    description:
      'An agent with its e-mail (free in the account, compared case-insensitively) and name; `active` defaults ' +
      'to true, `status` to available, `capacity` to null (no limit). Writes agent.created (and team.updated for ' +
      'each team it joins).',
    tag: 'Agents',
    body: CreateAgentSchema,
    ok: { status: 201, description: 'The agent.', body: OneAgent, etag: true },
    exceptions: { freeText: ['name'] },
  },
  getAgent: {
    summary: 'Get an agent',
    tag: 'Agents',
    pathParams: AGENT_PARAM,
    ok: { status: 200, description: 'The agent and its version.', body: OneAgent, etag: true },
    statuses: [404],
  },
  updateAgent: {
    summary: 'Update an agent',
    description:
      'Changes the fields sent. `team_ids` is the whole list (at most 23 memberships change in one request); a ' +
      '`status` sent without `status_until` has no end; `active: false` retires the agent (agents are never ' +
      'deleted). Writes agent.updated (and team.updated for each team it joins or leaves).',
    tag: 'Agents',
    pathParams: AGENT_PARAM,
    body: UpdateAgentSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The agent after the change.', body: OneAgent, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['name'] },
  },
  listTeams: {
    summary: 'List teams',
    description: "The account's teams by id, from a cursor (`after`, a team's id), each with its agents.",
    tag: 'Teams',
    query: TeamListQueryParams,
    ok: { status: 200, description: 'One page of teams and the cursor of the next.', body: TeamPage },
  },
  createTeam: {
    summary: 'Create a team',
    description:
      'A team with its name (free in the account, compared case-insensitively) and, optionally, its agents (at ' +
      'most 23). Writes team.created (and agent.updated for each agent that joins).',
    tag: 'Teams',
    body: CreateTeamSchema,
    ok: { status: 201, description: 'The team.', body: OneTeam, etag: true },
    exceptions: { freeText: ['name'] },
  },
  getTeam: {
    summary: 'Get a team',
    tag: 'Teams',
    pathParams: TEAM_PARAM,
    ok: { status: 200, description: 'The team and its version.', body: OneTeam, etag: true },
    statuses: [404],
  },
  updateTeam: {
    summary: 'Update a team',
    description:
      'Renames the team, or sets its agents (`agent_ids`, the whole list: at most 30 join or leave in one ' +
      'request). Writes team.updated (and agent.updated for each agent that joins or leaves).',
    tag: 'Teams',
    pathParams: TEAM_PARAM,
    body: UpdateTeamSchema,
    ifMatch: true,
    ok: { status: 200, description: 'The team after the change.', body: OneTeam, etag: true },
    statuses: [404, 412],
    exceptions: { freeText: ['name'] },
  },
  deleteTeam: {
    summary: 'Delete a team',
    description:
      'Deletes the team; its agents leave it in the same change. Refused while it has open tickets (a ticket ' +
      'moved into it as it is deleted is refused instead: 422 on team_id). Writes team.deleted (and ' +
      'agent.updated for each of its agents).',
    tag: 'Teams',
    pathParams: TEAM_PARAM,
    ifMatch: true,
    ok: { status: 200, description: 'The team as it was.', body: OneTeam },
    statuses: [404, 412],
    conflict:
      'a category routes to the team (`The team is the default team of the category <slug>: …`), it has open ' +
      'tickets (open, pending or in progress, assigned or not: `The team has <n> open tickets (open, pending or ' +
      'in progress): …`), or it has more than 15 agents (take them out of it first).',
  },
  getOpenApi: {
    summary: 'This document',
    description: 'The OpenAPI 3.1 document of every route. No key needed.',
    tag: 'Contract',
    ok: { status: 200, description: 'The document.', body: { contentTypes: ['application/json'] } },
  },
  docsPage: {
    summary: 'The API reference page',
    description: 'This document rendered for people (Swagger UI, served by the API itself). No key needed.',
    tag: 'Contract',
    ok: { status: 200, description: 'The page.', body: { contentTypes: ['text/html'] } },
  },
  docsAsset: {
    summary: "The reference page's script and style sheet",
    tag: 'Contract',
    pathParams: {
      asset: { description: 'swagger-ui-bundle.js or swagger-ui.css.', schema: v.picklist(DOCS_ASSETS) },
    },
    ok: {
      status: 200,
      description: 'The file.',
      body: { contentTypes: ['text/javascript', 'text/css'] },
    },
    statuses: [404],
  },
};
