import { routes } from '#functions/routes.ts';
import { answerSchemaNames, validatesInput } from './document.ts';
import { derivedKinds, type ExceptionKind, type MarkedKind, markedKinds } from './exception-kinds.ts';
import { operations } from './operations.ts';
import { queryParameterKey, type SharedParameter, sharedParameters } from './parameters.ts';

/**
 * The Spectral exceptions of the OpenAPI document: per kind (./exception-kinds.ts), the JSON pointers into it
 * where the kind's rules are off. Every pointer names what it covers (an operation, a schema, a property, a
 * parameter) by name, and must resolve in the document: a mark naming a field its operation lacks throws.
 */
export interface Exception {
  readonly name: string;
  readonly kind: ExceptionKind;
  readonly pointers: readonly string[];
}

type Json = { readonly [key: string]: unknown };

/** A JSON pointer as Spectral writes a finding's path (RFC 6901, then percent-encoded as a URI fragment). */
const pointerOf = (segments: readonly string[]) =>
  `#/${segments.map((s) => encodeURIComponent(s.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/')}`;

function resolves(document: Json, segments: readonly string[]): boolean {
  let node: unknown = document;
  for (const segment of segments) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, segment)) return false;
    node = (node as Json)[segment];
  }
  return true;
}

/** Each operation of the route table, where the document has it. */
const operationsOf = () =>
  routes.map((route) => ({
    route,
    op: operations[route.name as keyof typeof operations],
    at: ['paths', route.path, route.method.toLowerCase()] as const,
  }));

/** The component a request body's schema is, as the document references it. */
function bodySchema(document: Json, at: readonly string[]): string[] | undefined {
  const operation = at.reduce<unknown>((node, key) => (node as Json | undefined)?.[key], document) as
    | { requestBody?: { content: { 'application/json': { schema: { $ref?: string } } } } }
    | undefined;
  const schema = operation?.requestBody?.content['application/json'].schema;
  if (!schema) return undefined;
  // A body of several shapes is written inline (its oneOf), not as a component.
  if (schema.$ref === undefined) return [...at, 'requestBody', 'content', 'application/json', 'schema'];
  return schema.$ref.slice('#/'.length).split('/');
}

function derived(): Record<keyof typeof derivedKinds, string[][]> {
  const all = operationsOf();
  return {
    answers: [
      ...all.map(({ at }) => [...at, 'responses']),
      ...answerSchemaNames.map((name) => ['components', 'schemas', name]),
      ['components', 'responses'],
    ],
    public: all.filter(({ route }) => !route.auth).map(({ at }) => [...at]),
    noInput: all.filter(({ route, op }) => !validatesInput(route, op)).map(({ at }) => [...at, 'responses']),
  };
}

/** A body schema's shapes: itself, or each of its `oneOf` (a named component, where it is one). */
function bodyShapes(document: Json, body: string[]): string[][] {
  const variants = [...body, 'oneOf'];
  if (!resolves(document, variants)) return [body];
  const shapes: string[][] = [];
  for (let i = 0; resolves(document, [...variants, String(i)]); i++) {
    const shape = [...variants, String(i)];
    const ref = shape.reduce<unknown>((node, key) => (node as Json)[key], document) as { $ref?: string };
    shapes.push(ref.$ref === undefined ? shape : ref.$ref.slice('#/'.length).split('/'));
  }
  return shapes;
}

function marked(document: Json): Record<MarkedKind, string[][]> {
  const found: Record<MarkedKind, string[][]> = { freeText: [], accountScopedId: [] };
  for (const { route, op, at } of operationsOf()) {
    const body = bodySchema(document, at);
    for (const [kind, fields] of Object.entries(op.exceptions ?? {}) as [MarkedKind, readonly string[]][]) {
      for (const field of fields) {
        // A body of one of several shapes (oneOf: createImport's, by source): the field in each shape that has it.
        const inBody = (body ? bodyShapes(document, body) : [])
          .map((shape) => [...shape, 'properties', field])
          .filter((segments) => resolves(document, segments));
        const inQuery = [['components', 'parameters', queryParameterKey(route.name, field)]].filter(
          (segments) => resolves(document, segments),
        );
        if (inBody.length + inQuery.length === 0 || (inBody.length > 0 && inQuery.length > 0)) {
          throw new Error(
            `infra/openapi/operations.ts: ${route.name} marks "${field}" as ${kind}, but ` +
              (inBody.length === 0 ? 'has no such body field or query parameter' : 'has both'),
          );
        }
        found[kind].push(...inBody, ...inQuery);
      }
    }
  }
  for (const [name, shared] of Object.entries(sharedParameters) as [string, SharedParameter][]) {
    const kinds: readonly MarkedKind[] = shared.exceptions ?? [];
    for (const kind of kinds) found[kind].push(['components', 'parameters', name]);
  }
  return found;
}

export function exceptionsOf(document: Json): Exception[] {
  const byKind = { ...derived(), ...marked(document) };
  const kinds: Record<string, ExceptionKind> = { ...derivedKinds, ...markedKinds };
  return Object.entries(byKind).map(([name, list]) => {
    for (const segments of list) {
      if (!resolves(document, segments))
        throw new Error(`${name}: ${segments.join('/')} is not in the document`);
    }
    return { name, kind: kinds[name] as ExceptionKind, pointers: [...new Set(list.map(pointerOf))] };
  });
}
