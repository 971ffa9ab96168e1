import { route } from '#functions/routes.ts';
import { publicHandler } from '#lib/http/public-handler.ts';
import document from '../docs/openapi.json' with { type: 'json' };

/**
 * GET /api/openapi.json: the OpenAPI document (docs/openapi.json, written by `npm run openapi` from the route
 * table and the request schemas), with this deployment's own address as its server.
 */
export const handler = publicHandler({ route: route('getOpenApi') }, ({ baseUrl }) => ({
  statusCode: 200,
  contentType: 'application/json',
  body: JSON.stringify({ ...document, servers: [{ url: baseUrl }] }),
  headers: { 'Cache-Control': 'public, max-age=300' },
}));
