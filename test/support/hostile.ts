import { type RouteDefinition, routes } from '#functions/routes.ts';
import document from '../../docs/openapi.json' with { type: 'json' };
import type { Gateway } from './http.ts';

/**
 * Hostile requests for every route of the route table (issue 25): names of Object.prototype members, nesting
 * around the depth bound, non-finite numbers in every numeric field, every charset. Which fields are numbers and
 * which are objects is read from the OpenAPI document, so a field added to a schema is swept without a change
 * here. Bodies are written as JSON text, since an object literal cannot hold an own `__proto__` and
 * JSON.stringify cannot write 1e400.
 */
export const PROTOTYPE_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupGetter__',
];

/** JSON texts that parse to ±Infinity, or (as strings) that a numeric rule turns into it. */
export const NON_FINITE = ['1e400', '-1e400', '"1e400"', `"1${'0'.repeat(400)}"`];

/** Every Content-Type the body check takes (lib/http/json-limits.ts), and some it refuses. */
export const ACCEPTED_CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json; charset="utf-8"',
  'application/json;charset=utf8',
  'application/vnd.api+json; charset=utf-8',
];
export const REFUSED_CONTENT_TYPES = [
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json; charset=iso-8859-1',
];

/** A JSON object's text from entries whose values are JSON texts already. */
export const objectText = (entries: [string, string][]) =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;

/** `levels` of objects and arrays in turn, each object keyed `name`, around a number. */
export function nestedText(levels: number, name: string): string {
  let text = '1';
  for (let i = 0; i < levels; i++) text = i % 2 === 0 ? `[${text}]` : objectText([[name, text]]);
  return text;
}

type Schema = { $ref?: string; type?: string | string[]; anyOf?: Schema[]; oneOf?: Schema[] } & Record<
  string,
  unknown
>;
const doc = document as unknown as {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>;
  components: { schemas: Record<string, Schema> };
};
const resolve = (s: Schema | undefined): Schema | undefined =>
  s?.$ref ? resolve(doc.components.schemas[s.$ref.split('/').pop() as string]) : s;
/** Whether a schema, or any alternative of it at any depth (anyOf, oneOf), has one of `types`. */
const hasType = (schema: Schema | undefined, types: string[]): boolean => {
  const s = resolve(schema);
  if (s === undefined) return false;
  if ([s.type ?? []].flat().some((t) => types.includes(t))) return true;
  return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some((a) => hasType(a, types));
};

/** Whether a schema, or an alternative of it, is an object of any keys (custom_fields), not one of named fields. */
const isMap = (schema: Schema | undefined): boolean => {
  const s = resolve(schema);
  if (s === undefined) return false;
  if (s.propertyNames !== undefined || (s.additionalProperties ?? false) !== false) return true;
  return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some(isMap);
};

export interface BodyFields {
  /** Top-level fields that take a number. */
  numbers: string[];
  /** Top-level fields that take an object of any keys (custom_fields): hostile keys go inside them too. */
  objects: string[];
}

/** The numeric and object fields of a route's body, from the OpenAPI document; undefined: no body. */
export function bodyFieldsOf(route: RouteDefinition): BodyFields | undefined {
  const op = doc.paths[route.path]?.[route.method.toLowerCase()];
  const schema = resolve(op?.requestBody?.content['application/json']?.schema);
  if (!schema) return undefined;
  const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
  return {
    numbers: properties.filter(([, s]) => hasType(s, ['number', 'integer'])).map(([k]) => k),
    objects: properties.filter(([, s]) => isMap(s)).map(([k]) => k),
  };
}

/** A body each write route takes, so that a hostile addition is what the request is refused for, if anything. */
const BASE_BODIES: Record<string, Record<string, unknown>> = {
  createTicket: { subject: 'Hostile', description: 'd', requester_email: 'hostile@client.test' },
  updateTicket: { subject: 'Hostile again' },
  createDeal: { name: 'Hostile', contact_email: 'hostile@client.test', contact_first_name: 'H' },
  updateDeal: { name: 'Hostile again' },
  updateContact: { first_name: 'Hostile' },
  createWebhook: { url: 'http://127.0.0.1:4599/hooks', events: ['ticket.*'] },
  updateWebhook: { description: 'Hostile' },
  redeliverWebhook: { since: '2026-11-24T00:00:00Z' },
  createAgent: { email: 'hostile@desk.test', name: 'Hostile' },
  updateAgent: { name: 'Hostile again' },
  createTeam: { name: 'Hostile' },
  updateTeam: { name: 'Hostile again' },
  createOrganization: { name: 'Hostile' },
  updateOrganization: { name: 'Hostile again' },
  createRule: { name: 'Hostile', on: 'created', actions: [{ type: 'add_tags', tags: ['hostile'] }] },
  updateRule: { name: 'Hostile again' },
  createMacro: { name: 'Hostile', actions: [{ type: 'add_tags', tags: ['hostile'] }] },
  updateMacro: { name: 'Hostile again' },
};

/** The base body of a route as entries of JSON texts (none for a route without a body). */
export const baseEntries = (route: RouteDefinition): [string, string][] =>
  Object.entries(BASE_BODIES[route.name] ?? {}).map(([k, v]) => [k, JSON.stringify(v)]);

/** What the path parameters of every route name: things that exist, made in the test's account. */
export interface Things {
  ticket: string;
  deal: string;
  contact: string;
  pipeline: string;
  event: string;
  webhook: string;
  organization: string;
  /** A live key (the one rotate names). */
  key: string;
  agent: string;
  team: string;
  rule: string;
  macro: string;
  asset: string;
  /**
   * What the DELETE routes name instead: another ticket, deal, endpoint, key and organization, deleted once (then 404), so that
   * the object every other route names stays (a request refused for its body names a live object: 400 or 422).
   */
  doomed: {
    ticket: string;
    deal: string;
    webhook: string;
    key: string;
    team: string;
    organization: string;
    rule: string;
    macro: string;
  };
}

export async function makeThings(gateway: Gateway, key: string): Promise<Things> {
  const call = (method: string, path: string, body?: unknown) => gateway.call(method, path, { key, body });
  const ticket = await call('POST', '/api/tickets', BASE_BODIES.createTicket);
  const deal = await call('POST', '/api/deals', BASE_BODIES.createDeal);
  const webhook = await call('POST', '/api/webhooks', BASE_BODIES.createWebhook);
  const organization = await call('POST', '/api/organizations', { name: 'Hostile organization' });
  const events = await call('GET', '/api/events?limit=1');
  const newKey = () => call('POST', '/api/keys', { name: 'Hostile', scopes: ['tickets:read'] });
  const apiKey = await newKey();
  const agent = await call('POST', '/api/agents', { email: 'thing@desk.test', name: 'Thing' });
  const team = await call('POST', '/api/teams', { name: 'Thing' });
  const made = async (path: string, route: string) =>
    String((await call('POST', path, BASE_BODIES[route])).body.data.id);
  const doomed = {
    ticket: (await call('POST', '/api/tickets', BASE_BODIES.createTicket)).body.ticket.reference,
    deal: (await call('POST', '/api/deals', BASE_BODIES.createDeal)).body.data.uuid,
    webhook: (await call('POST', '/api/webhooks', BASE_BODIES.createWebhook)).body.data.id,
    key: (await newKey()).body.data.id,
    team: String((await call('POST', '/api/teams', { name: 'Doomed' })).body.data.id),
    organization: String(
      (await call('POST', '/api/organizations', { name: 'Doomed organization' })).body.data.id,
    ),
    rule: await made('/api/rules', 'createRule'),
    macro: await made('/api/macros', 'createMacro'),
  };
  return {
    ticket: ticket.body.ticket.reference,
    deal: deal.body.data.uuid,
    contact: deal.body.data.contact.uuid,
    pipeline: String(deal.body.data.pipeline.id),
    event: events.body.data[0].id,
    webhook: webhook.body.data.id,
    organization: String(organization.body.data.id),
    key: apiKey.body.data.id,
    agent: String(agent.body.data.id),
    team: String(team.body.data.id),
    rule: await made('/api/rules', 'createRule'),
    macro: await made('/api/macros', 'createMacro'),
    asset: 'swagger-ui.css',
    doomed,
  };
}

/** The route's path with its parameters filled in (a DELETE names the doomed one of its kind, when there is one). */
export function pathOf(route: RouteDefinition, things: Things): string {
  const doomed: Partial<Record<string, string>> = things.doomed;
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    route.method === 'DELETE' && doomed[name] !== undefined
      ? (doomed[name] as string)
      : String(things[name as keyof Things]),
  );
}

export const everyRoute: readonly RouteDefinition[] = routes;
