import { App, Aspects, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { authorizerTableActions, routes } from '#functions/routes.ts';
import { gatewayAnswers } from '#infra/api-contract.ts';
import { STAGES, stageConfigs } from '#infra/config.ts';
import { declaredAuthOf, lambdaAuthOf, lambdaRoutesOf, synthStage } from '#test/support/synth.ts';

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

  it('has one Lambda route per route-table entry, each behind the authorizer when the table says so', () => {
    expect(lambdaRoutesOf(template)).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
    expect(lambdaAuthOf(template)).toEqual(declaredAuthOf(routes));
  });

  it('runs every function on Node 24, arm64', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(routes.length + 1);
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
    }
  });

  it('sets only the environment that is read: TABLE_NAME by the data layer (functions with table actions), NODE_OPTIONS by Node, the EMF namespace by lib/http/metrics.ts', () => {
    const functions = template.findResources('AWS::Lambda::Function') as Record<
      string,
      { Properties: { FunctionName: string; Environment: { Variables: Record<string, unknown> } } }
    >;
    const withTable = new Set([
      `deskpipe-${stage}-authorizer`,
      ...routes.filter((r) => r.tableActions.length > 0).map((r) => `deskpipe-${stage}-${r.name}`),
    ]);
    for (const fn of Object.values(functions)) {
      const name = fn.Properties.FunctionName;
      expect(Object.keys(fn.Properties.Environment.Variables).sort(), name).toEqual(
        withTable.has(name)
          ? ['NODE_OPTIONS', 'POWERTOOLS_METRICS_NAMESPACE', 'TABLE_NAME']
          : ['NODE_OPTIONS', 'POWERTOOLS_METRICS_NAMESPACE'],
      );
    }
  });

  it("puts every function's EMF counts in the stage's own namespace", () => {
    const functions = template.findResources('AWS::Lambda::Function');
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({
        Environment: {
          Variables: expect.objectContaining({ POWERTOOLS_METRICS_NAMESPACE: `deskpipe-${stage}` }),
        },
      });
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

type Resource = { Type: string; Properties: Record<string, unknown> };

describe.each(STAGES)('production settings for %s', (stage) => {
  const { template, nagFindings } = synthStage(stage);
  const config = stageConfigs[stage];
  const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);

  it('cdk-nag (AwsSolutions) reports nothing unsuppressed', () => {
    expect(nagFindings).toEqual([]);
  });

  it('grants each function only its DynamoDB actions, on the table only', () => {
    const statements = resources
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap(
        (r) =>
          (r.Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] })
            .Statement,
      );
    const dynamo = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('dynamodb:')));
    expect(dynamo).toHaveLength(routes.filter((r) => r.tableActions.length > 0).length + 1);
    for (const statement of dynamo) {
      const actions = [statement.Action].flat();
      expect(actions).not.toContain('dynamodb:*');
      expect(
        actions.every((a) =>
          /^dynamodb:(GetItem|BatchGetItem|Query|PutItem|UpdateItem|DeleteItem|BatchWriteItem)$/.test(a),
        ),
      ).toBe(true);
      expect(statement.Resource).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^Table/), 'Arn'] });
    }
    const granted = dynamo.map((s) => [s.Action].flat().sort().join(',')).sort();
    const declared = [
      ...routes.filter((r) => r.tableActions.length > 0).map((r) => r.tableActions),
      authorizerTableActions,
    ]
      .map((actions) =>
        actions
          .map((a) => `dynamodb:${a}`)
          .sort()
          .join(','),
      )
      .sort();
    expect(granted).toEqual(declared);
  });

  it('keeps every log group for the stage retention, and writes JSON access logs', () => {
    const groups = resources.filter((r) => r.Type === 'AWS::Logs::LogGroup');
    expect(groups).toHaveLength(routes.length + 2);
    for (const group of groups) expect(group.Properties.RetentionInDays).toBe(config.logRetentionDays);
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: stage,
      AccessLogSetting: Match.objectLike({
        Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"'),
      }),
      MethodSettings: [
        Match.objectLike({
          ThrottlingRateLimit: config.throttling.rateLimit,
          ThrottlingBurstLimit: config.throttling.burstLimit,
        }),
      ],
    });
  });

  it('names resources after the stage', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { Name: `deskpipe-${stage}` });
    for (const fn of resources.filter((r) => r.Type === 'AWS::Lambda::Function')) {
      expect(fn.Properties.FunctionName).toMatch(new RegExp(`^deskpipe-${stage}-`));
    }
  });

  it('has the alarms with the configured thresholds', () => {
    const alarms = resources.filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const byName = Object.fromEntries(alarms.map((a) => [a.Properties.AlarmName as string, a.Properties]));
    const t = config.alarms;
    expect(byName[`deskpipe-${stage}-api-5xx-rate`]?.Threshold).toBe(t.api5xxPercent);
    expect(byName[`deskpipe-${stage}-api-p99-latency`]).toMatchObject({
      Threshold: t.apiP99LatencyMs,
      ExtendedStatistic: 'p99',
    });
    expect(byName[`deskpipe-${stage}-dynamodb-throttled`]?.Threshold).toBe(t.dynamoThrottledRequests);
    expect(byName[`deskpipe-${stage}-dynamodb-system-errors`]?.Threshold).toBe(t.dynamoSystemErrors);
    for (const name of ['authorizer', ...routes.map((r) => r.name)]) {
      expect(byName[`deskpipe-${stage}-${name}-errors`]?.Threshold).toBe(t.lambdaErrors);
      expect(byName[`deskpipe-${stage}-${name}-throttles`]?.Threshold).toBe(t.lambdaThrottles);
    }
    expect(alarms).toHaveLength(4 + 2 * (routes.length + 1));
    const withActions = alarms.filter((a) => Array.isArray(a.Properties.AlarmActions));
    expect(withActions).toHaveLength(config.alarmTopic ? alarms.length : 0);
  });

  it('outputs the API URL and the table name', () => {
    const outputs = Object.keys(template.toJSON().Outputs ?? {});
    expect(outputs).toEqual(expect.arrayContaining(['ApiUrl', 'TableName']));
  });
});

describe('per-route auth check', () => {
  it('notices one open route among guarded routes of the same method', () => {
    // A copy: the template is shared by every test of this file (test/support/synth.ts).
    const json = structuredClone(synthStage('dev').template.toJSON());
    const methods = Object.values(json.Resources as Record<string, Resource>).filter(
      (r) => r.Type === 'AWS::ApiGateway::Method' && r.Properties.HttpMethod === 'GET',
    );
    const listTickets = methods.find((m) => JSON.stringify(m.Properties.Integration).includes('listTickets'));
    if (!listTickets) throw new Error('no method integrates listTickets');
    listTickets.Properties.AuthorizationType = 'NONE';
    delete listTickets.Properties.AuthorizerId;
    const altered = lambdaAuthOf(Template.fromJSON(json));
    expect(altered).not.toEqual(declaredAuthOf(routes));
    expect(altered).toMatchObject({
      'GET /api/tickets': 'NONE',
      'GET /api/pipelines': 'TOKEN Authorization',
    });
  });
});

describe('cdk-nag check', () => {
  it('does report an unsuppressed finding', () => {
    const app = new App();
    const stack = new Stack(app, 'nag-probe');
    new RestApi(stack, 'Open').root.addMethod('GET');
    Aspects.of(app).add(new AwsSolutionsChecks());
    const findings = Annotations.fromStack(stack).findError(
      '*',
      Match.stringLikeRegexp('AwsSolutions-APIG4'),
    );
    expect(findings.length).toBeGreaterThan(0);
  });
});
