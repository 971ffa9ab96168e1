import { describe, expect, it } from 'vitest';
import { methodsOf, paths, routes } from '#functions/routes.ts';
import { PLAN_EDGE_LIMITS } from '#lib/accounts/edge-limits.ts';
import { nowMillis } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { atTime } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { lambdaAuthOf, synthStage } from '#test/support/synth.ts';

/**
 * The local gateway and the synthesized API answer alike: same routes with the same auth, and the gateway's
 * own errors with the same status and body (the template's body, with $context.requestId filled in).
 */
type Resource = { Type: string; Properties: Record<string, unknown> };
const { template } = synthStage('prod');
const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);

function deployedAnswer(type: string, requestId: string) {
  const response = resources.find(
    (r) => r.Type === 'AWS::ApiGateway::GatewayResponse' && r.Properties.ResponseType === type,
  );
  const templates = (response?.Properties.ResponseTemplates ?? {}) as Record<string, string>;
  const body = templates['application/json'] ?? '';
  return {
    status: Number(response?.Properties.StatusCode),
    body: JSON.parse(body.replace('$context.requestId', requestId)),
  };
}

const gateway = useGateway();

describe('local gateway and deployed API agree', () => {
  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s needs the API key in both, as the route table says',
    async (label, route) => {
      const deployedNeedsKey = lambdaAuthOf(template)[label] === 'TOKEN Authorization';
      const local = await gateway.call(route.method, route.path, route.method === 'POST' ? { body: {} } : {});
      const localNeedsKey = local.status === 401 && local.body?.message === 'Unauthenticated.';
      expect({ deployed: deployedNeedsKey, local: localNeedsKey }).toEqual({
        deployed: route.auth,
        local: route.auth,
      });
    },
  );

  it.each([
    ['UNAUTHORIZED', async () => gateway.call('GET', '/api/tickets')],
    ['MISSING_AUTHENTICATION_TOKEN', async () => gateway.call('GET', '/api/nothing-here')],
    [
      'REQUEST_TOO_LARGE',
      async () =>
        gateway.call('POST', '/api/tickets', {
          body: 'x'.repeat(10 * 1024 * 1024 + 1),
          headers: { 'Content-Type': 'text/plain' },
        }),
    ],
    [
      'ACCESS_DENIED',
      async () => {
        const startup = await createTestAccount({ plan: 'startup' });
        return gateway.call('GET', '/api/tickets', { key: startup.apiKey });
      },
    ],
  ])('%s: same status and body', async (type, call) => {
    const local = await call();
    const requestId = local.headers.get('x-request-id') ?? '';
    expect({ status: local.status, body: local.body }).toEqual(deployedAnswer(type, requestId));
  });

  it("THROTTLED (an account past its usage plan's burst): same status, body and Retry-After", async () => {
    const account = await createTestAccount({ plan: 'pro', rate_limit_per_minute: null });
    // The clock standing still: the bucket gets no token back between the requests, however slow they are.
    const local = await atTime(nowMillis(), async () => {
      for (let i = 0; i < PLAN_EDGE_LIMITS.pro.burstLimit; i++)
        expect((await gateway.call('GET', '/api/pipelines', { key: account.apiKey })).status).toBe(200);
      return gateway.call('GET', '/api/pipelines', { key: account.apiKey });
    });
    const requestId = local.headers.get('x-request-id') ?? '';
    expect({ status: local.status, body: local.body }).toEqual(deployedAnswer('THROTTLED', requestId));
    const response = resources.find(
      (r) => r.Type === 'AWS::ApiGateway::GatewayResponse' && r.Properties.ResponseType === 'THROTTLED',
    );
    const headers = response?.Properties.ResponseParameters as Record<string, string>;
    expect(local.headers.get('retry-after')).toBe(
      headers['gatewayresponse.header.Retry-After']?.slice(1, -1),
    );
  });

  it.each(paths.map((p) => [p]))('a wrong method on %s: 405 with the same Allow and body', async (path) => {
    const wrong = ['PUT', 'DELETE', 'PATCH'].find((m) => !methodsOf(path).includes(m as never)) as string;
    const local = await gateway.call(wrong, path.replace(/\{\w+\}/g, 'x'));
    const mock = resources.find(
      (r) =>
        r.Type === 'AWS::ApiGateway::Method' &&
        r.Properties.HttpMethod === 'ANY' &&
        JSON.stringify(r.Properties.Integration).includes(`'${methodsOf(path).join(', ')}'`),
    );
    const integration = mock?.Properties.Integration as {
      IntegrationResponses: {
        StatusCode: string;
        ResponseParameters: Record<string, string>;
        ResponseTemplates: Record<string, string>;
      }[];
    };
    const [response] = integration.IntegrationResponses;
    expect(local.status).toBe(Number(response?.StatusCode));
    expect(local.headers.get('allow')).toBe(
      response?.ResponseParameters['method.response.header.Allow']?.slice(1, -1),
    );
    const deployedBody = (response?.ResponseTemplates['application/json'] ?? '').split('\n').at(-1) ?? '';
    expect(local.body).toEqual(JSON.parse(deployedBody));
  });
});
