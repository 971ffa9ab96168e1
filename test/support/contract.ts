import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { matchPath } from '#functions/routes.ts';
import document from '../../docs/openapi.json' with { type: 'json' };

/**
 * Every answer the HTTP tests receive, checked against the OpenAPI document (docs/openapi.json): its status must
 * be one the document lists for the route and method, its content type one it lists for that status, a JSON
 * body must match the schema (objects are strict: a field the document lacks fails), and every header the
 * document requires must be there and every documented header that is there must match its schema.
 */
/**
 * The docs page's sections (the document's tags), in the order a user meets the domain: tickets and their
 * messages, e-mail, deals, contacts, pipelines, agents, teams, events, webhooks, trash, erasures, imports, keys, the contract.
 */
export const DOCS_PAGE_SECTIONS = [
  'Tickets',
  'E-mail',
  'Deals',
  'Contacts',
  'Organizations',
  'Rules',
  'Pipelines',
  'Agents',
  'Teams',
  'Events',
  'Webhooks',
  'Trash',
  'Erasures',
  'Imports',
  'Keys',
  'Contract',
];

type Schema = Record<string, unknown>;
interface MediaType {
  schema?: Schema;
}
interface Response {
  headers?: Record<string, { required?: boolean; schema: Schema }>;
  content?: Record<string, MediaType>;
}
interface OperationDoc {
  responses: Record<string, Response>;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
const compiled = new Map<Schema, ValidateFunction>();

/** A schema with the document's components beside it, so that its `#/components/...` references resolve. */
function validatorOf(schema: Schema): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile({ components: document.components, allOf: [schema] });
    compiled.set(schema, validate);
  }
  return validate;
}

const paths = document.paths as unknown as Record<string, Record<string, OperationDoc>>;
const components = document.components as unknown as { responses: Record<string, Response> };

export interface Answer {
  method: string;
  /** The request's path, with its query string or without. */
  path: string;
  status: number;
  headers: Headers;
  text: string;
}

/** The documented response an answer must meet, or why it has none. */
function documentedResponse(answer: Answer): Response | string {
  const pathname = new URL(answer.path, 'http://x').pathname;
  const matched = matchPath(pathname);
  const operation = matched ? paths[matched.path]?.[answer.method.toLowerCase()] : undefined;
  if (!operation) {
    // The gateway's own answers: before routing (413), then the path (404), then the method (405).
    if (answer.status === 413) return components.responses.GatewayPayloadTooLarge as Response;
    if (!matched)
      return answer.status === 404 ? (components.responses.NotFound as Response) : 'an unknown path';
    return answer.status === 405 ? (components.responses.MethodNotAllowed as Response) : 'an unserved method';
  }
  return operation.responses[String(answer.status)] ?? `status ${answer.status}, not listed`;
}

/** Throws, saying what differs, when the answer is not one the document describes. */
export function checkAnswer(answer: Answer): void {
  const where = `${answer.method} ${answer.path} → ${answer.status}`;
  const response = documentedResponse(answer);
  if (typeof response === 'string') throw new Error(`OpenAPI: ${where}: ${response}`);
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const value = answer.headers.get(name);
    if (value === null) {
      if (header.required) throw new Error(`OpenAPI: ${where}: required header ${name} is missing`);
      continue;
    }
    const validate = validatorOf(header.schema);
    if (!validate(value)) {
      throw new Error(
        `OpenAPI: ${where}: header ${name}: ${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`,
      );
    }
  }
  const contentType = (answer.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  const media = response.content?.[contentType];
  if (!media) throw new Error(`OpenAPI: ${where}: content type "${contentType}" is not listed`);
  if (contentType !== 'application/json' || !media.schema) return;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    throw new Error(`OpenAPI: ${where}: the body is not JSON`);
  }
  const validate = validatorOf(media.schema);
  if (!validate(body)) {
    throw new Error(
      `OpenAPI: ${where}: body ${ajv.errorsText(validate.errors)}\n${answer.text.slice(0, 2000)}`,
    );
  }
}
