import { describe, expect, it } from 'vitest';
import { type RouteDefinition, routes } from '#functions/routes.ts';
import { lambdaRoutesOf, routeDrift, synthStage } from '#test/support/synth.ts';

/** The synthesized stack and the route table name the same routes (test/unit/routes.test.ts checks the table itself). */
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
      scope: 'tickets:read',
      auth: true,
      tableActions: ['Query'],
    };
    expect(routeDrift([...routes, extra], deployed).missingFromStack).toEqual(['POST /api/ghost']);
    expect(routeDrift(routes.slice(1), deployed).missingFromTable).toEqual([
      `${routes[0]?.method} ${routes[0]?.path}`,
    ]);
  });
});
