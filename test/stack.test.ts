import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { gatewayAnswers } from '#infra/api-contract.ts';
import { STAGES, stageConfigs } from '#infra/config.ts';
import { lambdaRoutesOf, synthStage } from '#test/support/synth.ts';

describe.each(STAGES)('stack for %s', (stage) => {
  const { template } = synthStage(stage);
  const config = stageConfigs[stage];

  it('has the table with its stage name, TTL, and data protection as configured', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      TableName: `deskpipe-${stage}`,
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      Replicas: [
        Match.objectLike({
          DeletionProtectionEnabled: config.protectData,
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: config.pointInTimeRecovery },
        }),
      ],
    });
  });

  it('has a TOKEN authorizer on the Authorization header with the configured cache TTL', () => {
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'TOKEN',
      IdentitySource: 'method.request.header.Authorization',
      AuthorizerResultTtlInSeconds: config.authorizerCacheTtlSeconds,
    });
  });

  it('has one Lambda route per route-table entry, each behind the authorizer', () => {
    expect(lambdaRoutesOf(template)).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
    for (const route of routes) {
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: route.method,
        AuthorizationType: route.auth ? 'CUSTOM' : 'NONE',
      });
    }
  });

  it('runs every function on Node 24, arm64', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(routes.length + 1);
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
    }
  });

  it('shapes every gateway answer like the handlers errors', () => {
    for (const [type, answer] of Object.entries(gatewayAnswers)) {
      template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        StatusCode: String(answer.statusCode),
        ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"message"') },
        ResponseParameters: Match.objectLike({ 'gatewayresponse.header.X-Request-Id': 'context.requestId' }),
      });
    }
  });

  it('answers a wrong method on a known path with 405 and Allow, without auth', () => {
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'ANY',
      AuthorizationType: 'NONE',
      Integration: Match.objectLike({
        Type: 'MOCK',
        IntegrationResponses: [Match.objectLike({ StatusCode: '405' })],
      }),
    });
  });
});
