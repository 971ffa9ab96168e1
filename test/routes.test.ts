import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { authorizerEntry, type RouteDefinition, routes } from '#functions/routes.ts';
import { ROOT } from '#infra/local/environment.ts';
import { lambdaRoutesOf, routeDrift, synthStage } from '#test/support/synth.ts';

describe('route table drift', () => {
  const deployed = lambdaRoutesOf(synthStage('dev').template);

  it('the stack serves exactly the routes of the table', () => {
    expect(routeDrift(routes, deployed)).toEqual({ missingFromStack: [], missingFromTable: [] });
  });

  it('the drift check catches a route in one and not the other', () => {
    const extra: RouteDefinition = {
      name: 'ghost',
      method: 'POST',
      path: '/api/ghost',
      entry: 'functions/ghost.ts',
      auth: true,
      tableActions: ['Query'],
    };
    expect(routeDrift([...routes, extra], deployed).missingFromStack).toEqual(['POST /api/ghost']);
    expect(routeDrift(routes.slice(1), deployed).missingFromTable).toEqual([
      `${routes[0]?.method} ${routes[0]?.path}`,
    ]);
  });

  it.each([...routes.map((r) => r.entry), authorizerEntry])(
    '%s exports a handler function',
    async (entry) => {
      const module = await import(pathToFileURL(join(ROOT, entry)).href);
      expect(typeof module.handler).toBe('function');
    },
  );

  it('names each route once and each method/path pair once', () => {
    expect(new Set(routes.map((r) => r.name)).size).toBe(routes.length);
    expect(new Set(routes.map((r) => `${r.method} ${r.path}`)).size).toBe(routes.length);
  });
});
