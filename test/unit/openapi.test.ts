import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { DOCUMENT_PATH, documentText } from '#infra/openapi/write.ts';
import { checkAnswer, DOCS_PAGE_SECTIONS } from '#test/support/contract.ts';

/**
 * The contract (decisions.md, "Contract"): the checked-in document is the one the route table and the schemas
 * make, it is valid OpenAPI 3.1, it covers every route, and the API serves it. That every answer of the HTTP
 * tests matches it is checked in test/support/http.ts.
 */
const checkedIn = readFileSync(DOCUMENT_PATH, 'utf8');
const document = JSON.parse(checkedIn);

describe('the OpenAPI document', () => {
  it('is the one `npm run openapi` writes from the route table and the schemas (not stale)', () => {
    expect(checkedIn, 'docs/openapi.json is stale: run `npm run openapi`').toBe(documentText());
  });

  it('passes the OpenAPI 3.1 validator', async () => {
    const parsed = await SwaggerParser.validate(structuredClone(document));
    expect((parsed as { openapi?: string }).openapi).toBe('3.1.0');
  });

  it('has an operation for every route, with its auth, and nothing else', () => {
    const operations = Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.entries(ops as Record<string, { operationId: string; security: unknown[] }>).map(
        ([method, op]) => ({
          name: op.operationId,
          method: method.toUpperCase(),
          path,
          auth: op.security.length > 0,
        }),
      ),
    );
    expect(operations.sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      routes
        .map((r) => ({ name: r.name, method: r.method, path: r.path, auth: r.auth }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    );
  });

  it('declares its tags in the order a user meets the domain, every operation under one of them', () => {
    // The docs page (Swagger UI) shows the declared tags in this order, then any undeclared one after them.
    expect(document.tags.map((t: { name: string }) => t.name)).toEqual(DOCS_PAGE_SECTIONS);
    const used = Object.values(document.paths).flatMap((ops) =>
      Object.values(ops as Record<string, { tags: string[] }>).flatMap((op) => op.tags),
    );
    expect([...new Set(used)].sort()).toEqual([...DOCS_PAGE_SECTIONS].sort());
  });

  it('describes request bodies from the validation schemas: required fields, limits, enums', () => {
    const create = document.components.schemas.CreateTicketRequest;
    expect(create.required).toEqual(['subject', 'description', 'requester_email']);
    expect(create.properties.subject).toEqual({ type: 'string', maxLength: 255 });
    expect(create.properties.priority.anyOf[0].enum).toEqual(['low', 'medium', 'high', 'urgent']);
    expect(document.components.schemas.UpdateTicketRequest.required).toBeUndefined();
    expect(document.components.schemas.CreateDealRequest.required).toEqual(['name', 'contact_email']);
    // Query parameters are components (infra/openapi/parameters.ts), listed by reference.
    const parameter = (p: { $ref?: string; name?: string }) =>
      p.$ref ? document.components.parameters[p.$ref.slice('#/components/parameters/'.length)] : p;
    const list = document.paths['/api/tickets'].get.parameters.map(
      (p: { $ref?: string; name?: string }) => parameter(p).name,
    );
    expect(list).toEqual([
      'page',
      'per_page',
      'status',
      'priority',
      'assignee_id',
      'assignee',
      'team_id',
      'organization_id',
      'requester_email',
      'search',
      'sla',
      'sort',
      'custom_fields',
    ]);
  });
});

describe('the contract check of the HTTP tests', () => {
  const answer = (over: Partial<Parameters<typeof checkAnswer>[0]> & { body?: unknown }) => {
    const headers = new Headers({ 'Content-Type': 'application/json', 'X-Request-Id': 'r-1' });
    for (const [name, value] of Object.entries(
      over.headers instanceof Headers ? Object.fromEntries(over.headers) : {},
    ))
      headers.set(name, value);
    return {
      method: 'GET',
      path: '/api/pipelines',
      status: 200,
      headers,
      text: JSON.stringify(over.body ?? { data: [] }),
      ...over,
      ...(over.headers ? { headers } : {}),
    };
  };
  const rated = new Headers({
    'X-RateLimit-Limit': '10',
    'X-RateLimit-Remaining': '9',
    'RateLimit-Policy': '"minute";q=10;w=60',
    RateLimit: '"minute";r=9;t=30',
  });

  it('passes an answer the document describes', () => {
    expect(() => checkAnswer(answer({ headers: rated }))).not.toThrow();
  });

  it('fails a field the document lacks, a missing required header, and a status it does not list', () => {
    const extra = { data: [{ id: 1, name: 'Sales', is_default: true, stages: [], secret: 1 }] };
    expect(() => checkAnswer(answer({ headers: rated, body: extra }))).toThrow(/additional properties/);
    expect(() => checkAnswer(answer({}))).toThrow(/required header X-RateLimit-Limit/);
    expect(() => checkAnswer(answer({ headers: rated, status: 418 }))).toThrow(/status 418, not listed/);
    expect(() => checkAnswer(answer({ headers: rated, path: '/api/nowhere' }))).toThrow(/unknown path/);
  });
});
