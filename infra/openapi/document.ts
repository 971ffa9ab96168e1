import {
  type ConversionConfig,
  type JsonSchema,
  toJsonSchema,
  toJsonSchemaDefs,
} from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { PUBLIC, type RouteDefinition, routes } from '#functions/routes.ts';
import { CreateKeySchema, RotateKeySchema } from '#lib/accounts/key-schemas.ts';
import { SCOPES } from '#lib/accounts/scopes.ts';
import { UpdateContactSchema } from '#lib/contacts/schemas.ts';
import { CreateDealSchema, UpdateDealSchema } from '#lib/deals/schemas.ts';
import { MAX_JSON_DEPTH } from '#lib/http/json-limits.ts';
import {
  CreateImportSchema,
  FreshdeskImportSchema,
  NdjsonImportSchema,
  ZendeskImportSchema,
} from '#lib/imports/job-schemas.ts';
import { CreateOrganizationSchema, UpdateOrganizationSchema } from '#lib/organizations/schemas.ts';
import {
  CreateAgentSchema,
  CreateTeamSchema,
  UpdateAgentSchema,
  UpdateTeamSchema,
} from '#lib/people/schemas.ts';
import { BacktestSchema } from '#lib/rules/backtest.ts';
import {
  CreateMacroSchema,
  CreateRuleSchema,
  UpdateMacroSchema,
  UpdateRuleSchema,
} from '#lib/rules/schemas.ts';
import { TestRulesSchema } from '#lib/rules/test-rules.ts';
import { CreateMessageSchema } from '#lib/tickets/messages/post-rules.ts';
import { CreateTicketSchema, UpdateTicketSchema } from '#lib/tickets/schemas.ts';
import { type WireForm, wireOf } from '#lib/validation/wire-form.ts';
import { CreateEndpointSchema, RedeliverSchema, UpdateEndpointSchema } from '#lib/webhooks/schemas.ts';
import { type Operation, operations } from './operations.ts';
import { queryParameterKey, sharedParameters } from './parameters.ts';
import * as answers from './schemas.ts';

/**
 * The OpenAPI 3.1 document, built from the route table (method, path, auth) and the valibot schemas the handlers
 * validate with (their wire forms: lib/validation/wire-form.ts) or answer in (./schemas.ts). `npm run openapi`
 * writes it to docs/openapi.json, which GET /api/openapi.json serves; test/openapi.test.ts fails when that file is
 * stale.
 */

/** Named schemas: components.schemas, referenced wherever they are used. */
const definitions: Record<string, v.GenericSchema> = {
  Ticket: answers.Ticket,
  ListedTicket: answers.ListedTicket,
  TicketPage: answers.TicketPage,
  Deal: answers.Deal,
  Pipeline: answers.Pipeline,
  Error: answers.ErrorBody,
  ValidationError: answers.ValidationErrorBody,
  ServerError: answers.ServerErrorBody,
  CreateTicketRequest: CreateTicketSchema,
  UpdateTicketRequest: UpdateTicketSchema,
  CreateDealRequest: CreateDealSchema,
  UpdateDealRequest: UpdateDealSchema,
  UpdateContactRequest: UpdateContactSchema,
  DealDetail: answers.DealDetail,
  DealPage: answers.DealPage,
  PipelineBoard: answers.PipelineBoard,
  Contact: answers.Contact,
  ContactPage: answers.ContactPage,
  Organization: answers.Organization,
  OrganizationPage: answers.OrganizationPage,
  CreateOrganizationRequest: CreateOrganizationSchema,
  // An import's body, one of three shapes by `source`, each named: the shapes' fields are then referred to by name
  // (the Spectral exceptions: infra/openapi/exceptions.ts), never by a position in a oneOf.
  CreateImportRequest: CreateImportSchema,
  ZendeskImportRequest: ZendeskImportSchema,
  FreshdeskImportRequest: FreshdeskImportSchema,
  NdjsonImportRequest: NdjsonImportSchema,
  UpdateOrganizationRequest: UpdateOrganizationSchema,
  OrganizationCreatedEvent: answers.OrganizationCreatedEvent,
  OrganizationUpdatedEvent: answers.OrganizationUpdatedEvent,
  OrganizationDeletedEvent: answers.OrganizationDeletedEvent,
  TicketCreatedEvent: answers.TicketCreatedEvent,
  TicketUpdatedEvent: answers.TicketUpdatedEvent,
  Message: answers.Message,
  MessagePage: answers.MessagePage,
  CreateMessageRequest: CreateMessageSchema,
  MessageCreatedEvent: answers.MessageCreatedEvent,
  TicketSlaBreachedEvent: answers.TicketSlaBreachedEvent,
  DealCreatedEvent: answers.DealCreatedEvent,
  DealUpdatedEvent: answers.DealUpdatedEvent,
  ContactCreatedEvent: answers.ContactCreatedEvent,
  ContactUpdatedEvent: answers.ContactUpdatedEvent,
  Event: answers.Event,
  EventFeed: answers.EventFeed,
  WebhookEndpoint: answers.WebhookEndpoint,
  WebhookEndpointWithSecret: answers.WebhookEndpointWithSecret,
  CreateWebhookRequest: CreateEndpointSchema,
  UpdateWebhookRequest: UpdateEndpointSchema,
  WebhookDeliveryAttempt: answers.WebhookDeliveryAttempt,
  WebhookDeliveryAttemptPage: answers.WebhookDeliveryAttemptPage,
  RedeliverWebhookRequest: RedeliverSchema,
  ApiKey: answers.ApiKey,
  ApiKeyWithSecret: answers.ApiKeyWithSecret,
  CreateApiKeyRequest: CreateKeySchema,
  RotateApiKeyRequest: RotateKeySchema,
  Agent: answers.Agent,
  AgentPage: answers.AgentPage,
  CreateAgentRequest: CreateAgentSchema,
  UpdateAgentRequest: UpdateAgentSchema,
  Team: answers.Team,
  TeamPage: answers.TeamPage,
  CreateTeamRequest: CreateTeamSchema,
  UpdateTeamRequest: UpdateTeamSchema,
  AgentCreatedEvent: answers.AgentCreatedEvent,
  AgentUpdatedEvent: answers.AgentUpdatedEvent,
  TeamCreatedEvent: answers.TeamCreatedEvent,
  TeamUpdatedEvent: answers.TeamUpdatedEvent,
  TeamDeletedEvent: answers.TeamDeletedEvent,
  Rule: answers.Rule,
  RulePage: answers.RulePage,
  CreateRuleRequest: CreateRuleSchema,
  UpdateRuleRequest: UpdateRuleSchema,
  TestRulesRequest: TestRulesSchema,
  RuleTestResult: answers.RuleTestResult,
  BacktestRuleRequest: BacktestSchema,
  RuleBacktestResult: answers.RuleBacktestResult,
  Macro: answers.Macro,
  MacroPage: answers.MacroPage,
  CreateMacroRequest: CreateMacroSchema,
  UpdateMacroRequest: UpdateMacroSchema,
  RuleCreatedEvent: answers.RuleCreatedEvent,
  RuleUpdatedEvent: answers.RuleUpdatedEvent,
  RuleDeletedEvent: answers.RuleDeletedEvent,
  MacroCreatedEvent: answers.MacroCreatedEvent,
  MacroUpdatedEvent: answers.MacroUpdatedEvent,
  MacroDeletedEvent: answers.MacroDeletedEvent,
};

/** The answers among them (declared in ./schemas.ts), which the lint's request-side rules leave alone. */
export const answerSchemaNames: readonly string[] = Object.entries(definitions)
  .filter(([, schema]) => (Object.values(answers) as unknown[]).includes(schema))
  .map(([name]) => name);

/**
 * Actions with no JSON Schema form: checks that need the whole input (a field that prohibits another, at least
 * one field changed), and normalisation (trim, upper-case). They are enforced at runtime and described in words.
 */
const RUNTIME_ONLY = new Set(['check', 'raw_check', 'trim', 'to_upper_case', 'metadata']);

type ValibotNode = v.GenericSchema & { entries?: Record<string, v.GenericSchema> };

const config: ConversionConfig = {
  target: 'draft-2020-12',
  // A field's pipeline is described up to its first transformation: the wire form it carries says the rest.
  typeMode: 'input',
  errorMode: 'throw',
  overrideAction: ({ valibotAction, jsonSchema }) => {
    const metadata = (valibotAction as { metadata?: { wire?: WireForm; format?: string } }).metadata;
    if (metadata?.wire) return plain(metadata.wire.schema, {});
    // A format the service checks with its own reader (an address: lib/email/addresses.ts), named in a wire form.
    if (metadata?.format) return { ...jsonSchema, format: metadata.format };
    // Every integer the API takes or answers is within ±(2^53 − 1) (lib/number-fields.ts, MAX_EXACT_INTEGER).
    if (valibotAction.type === 'integer') return { ...jsonSchema, format: 'int64' };
    return RUNTIME_ONLY.has(valibotAction.type) ? jsonSchema : undefined;
  },
  overrideSchema: ({ valibotSchema, jsonSchema }) => {
    const node = valibotSchema as ValibotNode;
    // A required field's pipeline sits in optional(..., null) so that it can report its own message.
    if (node.type === 'optional' && wireOf(node)) {
      const { default: _, ...rest } = jsonSchema;
      return rest;
    }
    if (node.entries && !node.type.startsWith('strict')) {
      const required = Object.entries(node.entries)
        .filter(([, entry]) => wireOf(entry)?.required)
        .map(([key]) => key);
      const { required: _, ...rest } = jsonSchema;
      return required.length > 0 ? { ...rest, required } : rest;
    }
    return undefined;
  },
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
};

/**
 * A schema on its own, without $schema or $defs (they live in components). A wire form names no definition
 * (and converting the definitions inside one would recurse).
 */
function plain(schema: v.GenericSchema, defs: Record<string, v.GenericSchema> = definitions): JsonSchema {
  const { $schema: _, $defs: __, ...rest } = toJsonSchema(schema, { ...config, definitions: defs });
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });

/** A header whose value is a whole number of requests or seconds. */
const count: JsonSchema = { type: 'string', pattern: '^\\d+$' };

const headers = {
  'X-Request-Id': {
    description: "The request's id (yours, when you send a sane X-Request-Id): quote it to support.",
    schema: { type: 'string' },
  },
  'X-RateLimit-Limit': {
    description: "Requests the account may make per minute (its plan's, or its own).",
    schema: count,
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in this minute.',
    schema: count,
  },
  'RateLimit-Policy': {
    description: 'The IETF draft\'s policy: `"minute";q=<limit>;w=60`.',
    schema: { type: 'string', pattern: '^"minute";q=\\d+;w=60$' },
  },
  RateLimit: {
    description: 'The IETF draft\'s state: `"minute";r=<remaining>;t=<seconds to reset>`.',
    schema: { type: 'string', pattern: '^"minute";r=\\d+;t=\\d+$' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    schema: count,
  },
  'X-RateLimit-Reset': {
    description: 'When the minute ends, in epoch seconds.',
    schema: count,
  },
  ETag: {
    description: "The ticket's version: send it as If-Match to update only that version.",
    schema: { type: 'string', pattern: '^"\\d+"$' },
  },
  'Idempotent-Replayed': {
    description:
      'Present (true) when this is the kept answer of an earlier request with the same Idempotency-Key.',
    schema: { const: 'true' },
  },
  Allow: { description: 'The methods the path serves.', schema: { type: 'string' } },
  'Cache-Control': {
    description: 'The answer shows a secret or personal data: no cache may keep it.',
    schema: { const: 'no-store' },
  },
  'Content-Disposition': {
    description:
      "`attachment` with the file's name (RFC 6266: an ASCII `filename` and the real one as `filename*`).",
    schema: { type: 'string', pattern: '^attachment; filename="' },
  },
  Location: {
    description: 'Where the file is served for 5 minutes (a presigned link of the mail bucket).',
    schema: { type: 'string', format: 'uri' },
  },
} as const satisfies Record<string, { description: string; schema: JsonSchema }>;

type HeaderName = keyof typeof headers;

const RATE_HEADERS: HeaderName[] = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'RateLimit-Policy',
  'RateLimit',
];

/** The headers of one answer: X-Request-Id always, the others by name, each required or not. */
function headersOf(names: readonly HeaderName[], required: readonly HeaderName[] = []) {
  return Object.fromEntries(
    (['X-Request-Id', ...names] as HeaderName[]).map((name) => [
      name,
      { ...headers[name], required: name === 'X-Request-Id' || required.includes(name) },
    ]),
  );
}

const STATUS_TEXT: Record<number, string> = {
  400: `The body is not a JSON object, or nests deeper than ${MAX_JSON_DEPTH} levels.`,
  401: 'No key, or a key that is malformed, unknown, revoked or expired (rotated out).',
  403:
    "The key lacks the operation's scope (`This key lacks the scope <scope>.`, before anything else is " +
    "checked), or the account's plan has no API access.",
  404: 'Not found (or not this account’s).',
  409: 'A request with this Idempotency-Key is still being served: retry after Retry-After.',
  412: 'If-Match names a version the ticket no longer has: nothing changed.',
  413: 'The body is over 1 MiB.',
  415: 'The body is not sent as application/json, or names a charset other than UTF-8.',
  422: 'A field breaks a rule: every field’s messages, under the names sent.',
  429: 'Over the rate limit: nothing changed.',
  500: 'An unexpected fault: nothing about it but the id to quote.',
  502: 'The gateway could not get an answer.',
  503: 'The store is unreachable or slow: retry after Retry-After (with the same Idempotency-Key for a write).',
};

/** What a list bounded by its read budget adds to its 422 (lib/pagination.ts, withinReadBudget). */
const READ_BUDGET_TEXT =
  ' Also `search`, `page` or `filters` when the list would read more index keys than its budget: a search ' +
  'word that matches too many entries ("search for a longer or less common word"), a page too deep ("ask for ' +
  'an earlier page, or narrow the list with a filter or a search"), or several filters that each match too ' +
  'many entries to be combined ("add a filter that matches fewer entries, or a search").';

function errorBody(status: number) {
  if (status === 422) return ref('ValidationError');
  if (status === 500 || status === 502) return ref('ServerError');
  return ref('Error');
}

/**
 * Whether a route takes input it validates, so that it can answer 422: a body, a query, or (a write past the
 * authorizer) an Idempotency-Key. The lint's no-input exception is the routes without (./exceptions.ts).
 */
export function validatesInput(route: RouteDefinition, op: Operation): boolean {
  return op.body !== undefined || op.query !== undefined || (route.auth && route.method !== 'GET');
}

/** Every status a route can answer besides its success, and the headers of each. */
function failures(route: RouteDefinition, op: Operation) {
  const write = route.method !== 'GET';
  const hasBody = op.body !== undefined;
  const statuses = new Set<number>([429, 500, 502, ...(op.statuses ?? [])]);
  if (route.auth) for (const s of [401, 403, 503]) statuses.add(s);
  if (hasBody) for (const s of [400, 413, 415]) statuses.add(s);
  if (validatesInput(route, op)) statuses.add(422);
  if (route.auth && write) statuses.add(409);
  const answered = (status: number) => {
    const rate = route.auth && ![401, 403, 500, 502, 503].includes(status) ? RATE_HEADERS : [];
    const retry: HeaderName[] = [409, 429, 503].includes(status) ? ['Retry-After'] : [];
    const reset: HeaderName[] = status === 429 && route.auth ? ['X-RateLimit-Reset'] : [];
    return {
      description:
        (STATUS_TEXT[status] ?? String(status)) +
        (status === 422 && op.readBudget ? READ_BUDGET_TEXT : '') +
        (status === 409 && op.retriedConflict ? ` Or, as well with Retry-After: ${op.retriedConflict}` : '') +
        (status === 409 && op.conflict ? ` Or, without Retry-After: ${op.conflict}` : ''),
      // A route's own 409 (op.conflict) does not succeed by retrying: no Retry-After then.
      headers: headersOf(
        [...rate, ...retry, ...reset],
        (status === 409 && !op.conflict) || status === 503 ? ['Retry-After'] : [],
      ),
      content: json(errorBody(status)),
    };
  };
  return Object.fromEntries([...statuses].sort().map((s) => [String(s), answered(s)]));
}

function success(route: RouteDefinition, op: Operation) {
  const { ok } = op;
  const names: HeaderName[] = [
    ...(route.auth ? RATE_HEADERS : []),
    ...(ok.etag ? (['ETag'] as const) : []),
    ...(route.auth && route.method !== 'GET' ? (['Idempotent-Replayed'] as const) : []),
    ...(ok.noStore ? (['Cache-Control'] as const) : []),
    ...(ok.download ? (['Content-Disposition'] as const) : []),
  ];
  const required: HeaderName[] = [
    ...(route.auth ? RATE_HEADERS : []),
    ...(ok.etag ? (['ETag'] as const) : []),
    ...(ok.noStore ? (['Cache-Control'] as const) : []),
    ...(ok.download ? (['Content-Disposition'] as const) : []),
  ];
  const content =
    'contentTypes' in ok.body
      ? Object.fromEntries(ok.body.contentTypes.map((type) => [type, {}]))
      : json(plain(ok.body as v.GenericSchema));
  // A download too large for a function's answer (deployed only): a 303 to where the file is served.
  const redirect: HeaderName[] = [...(route.auth ? RATE_HEADERS : []), 'Cache-Control', 'Location'];
  return {
    [String(ok.status)]: { description: ok.description, headers: headersOf(names, required), content },
    ...(ok.download
      ? {
          '303': {
            description:
              'Deployed, a file over 4 MiB (more than a function may answer): fetch it from Location, a link ' +
              'that works for 5 minutes, with no key.',
            headers: headersOf(redirect, redirect),
            content: json(ref('Error')),
          },
        }
      : {}),
  };
}

/** An operation's query parameters, by their key in components.parameters (./parameters.ts says why). */
function queryParameters(route: RouteDefinition, op: Operation): [string, Record<string, unknown>][] {
  const list: [string, Record<string, unknown>][] = [];
  for (const [name, entry] of Object.entries(op.query?.entries ?? {})) {
    const form = wireOf(entry);
    if (!form) continue; // not a parameter (lib/tickets/list-query.ts says why)
    const schema = plain(form.schema);
    const deep = (form.schema as { type?: string }).type === 'record';
    list.push([
      queryParameterKey(route.name, name),
      { name, in: 'query', schema, ...(deep ? { style: 'deepObject', explode: true } : {}) },
    ]);
  }
  return list;
}

const parameterRef = (key: string) => ({ $ref: `#/components/parameters/${key}` });

function parameters(route: RouteDefinition, op: Operation) {
  const list: Record<string, unknown>[] = [];
  for (const [name, { description, schema }] of Object.entries(op.pathParams ?? {})) {
    list.push({ name, in: 'path', required: true, description, schema: plain(schema) });
  }
  for (const [key] of queryParameters(route, op)) list.push(parameterRef(key));
  if (route.auth && route.method !== 'GET') list.push(parameterRef('IdempotencyKey'));
  if (op.ifMatch) list.push(parameterRef('IfMatch'));
  return list;
}

function operation(route: RouteDefinition) {
  const op = operations[route.name as keyof typeof operations];
  const params = parameters(route, op);
  return {
    operationId: route.name,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: [op.tag],
    // The route's scope, from the route table: the one the handler stack checks (lib/http/scope.ts).
    // The trash's routes: any one of the three types' scopes (the handler stack checks the type's: scope.ts).
    security:
      route.scope === PUBLIC
        ? []
        : route.scopeByType
          ? (['tickets', 'deals', 'contacts'] as const).map((t) => ({
              apiKey: [`${t}:${route.scopeByType === 'query' ? 'read' : 'write'}`],
            }))
          : [{ apiKey: [route.scope] }],
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: json(plain(op.body)),
          },
        }
      : {}),
    responses: { ...success(route, op), ...failures(route, op) },
  };
}

export function openApiDocument(version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method.toLowerCase()] = operation(route);
  }
  const components = toJsonSchemaDefs(definitions, config);
  return {
    openapi: '3.1.0',
    info: {
      title: 'deskpipe',
      version,
      description:
        'Support tickets and sales deals for teams that run a helpdesk and a pipeline. Send your API key as ' +
        '`Authorization: Bearer <key>`. Errors are JSON with a `message` (and, for 422, `errors` by field). ' +
        'Writes take an `Idempotency-Key`; every answer past authentication carries the rate-limit headers.',
    },
    // Every tag, in the order a user meets the domain: the docs page shows its sections in this order (a tag
    // left out would come after all of these, in the order of its first path).
    tags: [
      {
        name: 'Tickets',
        description: 'Tickets and their messages: replies, internal notes, the mail they came in.',
      },
      { name: 'E-mail', description: 'The e-mail channel: every received mail and what became of it.' },
      { name: 'Deals', description: 'Sales deals, moved through the stages of a pipeline.' },
      { name: 'Contacts', description: 'The people deals are with.' },
      {
        name: 'Organizations',
        description: "Customers' companies, known by their domains (never a free-mail or disposable one).",
      },
      {
        name: 'Rules',
        description:
          'Business rules run inside the change they react to, time rules, a test that writes nothing, macros.',
      },
      { name: 'Pipelines', description: 'Pipelines and their stages, and the board.' },
      {
        name: 'Agents',
        description: 'The people who work the tickets: their status, capacity and open tickets.',
      },
      { name: 'Teams', description: 'Teams of agents, which categories route tickets to.' },
      { name: 'Events', description: 'Every change, in order, to read from a cursor.' },
      { name: 'Webhooks', description: 'Endpoints that receive the events, signed (Standard Webhooks).' },
      { name: 'Trash', description: 'Deleted tickets, deals and contacts, until they are purged (30 days).' },
      { name: 'Erasures', description: 'Erasing a person (GDPR article 17), everywhere, in the background.' },
      {
        name: 'Imports',
        description: 'Moving a helpdesk in: Zendesk, Freshdesk or a file, silently, keyed by the source ids.',
      },
      { name: 'Keys', description: 'API keys: scopes, expiry, rotation.' },
      { name: 'Contract', description: 'This document and its page.' },
    ],
    paths,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key (`dpk_` + 46 base62 characters, the last 6 a CRC-32 checksum), made with `POST /api/keys` ' +
            'or `npm run admin -- keys create`. Each operation names the scope it needs in its security ' +
            `requirement; a key holds some of ${SCOPES.join(', ')}, or \`*\` (every scope), and a \`:write\` ` +
            'scope includes its `:read`.',
        },
      },
      schemas: components,
      parameters: {
        ...Object.fromEntries(
          Object.entries(sharedParameters).map(([key, { parameter }]) => [key, parameter]),
        ),
        ...Object.fromEntries(
          routes.flatMap((route) =>
            queryParameters(route, operations[route.name as keyof typeof operations]),
          ),
        ),
      },
      responses: {
        MethodNotAllowed: {
          description: 'The path does not serve this method.',
          headers: headersOf(['Allow'], ['Allow']),
          content: json(ref('Error')),
        },
        NotFound: {
          description: 'No such path.',
          headers: headersOf([]),
          content: json(ref('Error')),
        },
        GatewayPayloadTooLarge: {
          description: 'A body over 10 MB, refused by the gateway on any path, before routing.',
          headers: headersOf([]),
          content: json(ref('Error')),
        },
      },
    },
  };
}
