import { App, Aspects, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { authorizerTableActions, routes } from '#functions/routes.ts';
import {
  emailOutboxWorker,
  slaBreachesWorker,
  webhookDueWorker,
  webhookStreamWorker,
  workers,
} from '#functions/workers.ts';
import { gatewayAnswers } from '#infra/api-contract.ts';
import { STAGES, stageConfigs } from '#infra/config.ts';
import { STREAM_MAX_RECORD_AGE, STREAM_RETRY_ATTEMPTS } from '#infra/constructs/webhook-dispatcher.ts';
import { declaredAuthOf, lambdaAuthOf, lambdaRoutesOf, synthStage } from '#test/support/synth.ts';

/** The table's logical id (the stack has one table). */
const tableIdOf = (template: Template) =>
  Object.keys(template.findResources('AWS::DynamoDB::GlobalTable'))[0];

describe.each(STAGES)('stack for %s', (stage) => {
  const { template } = synthStage(stage);
  const config = stageConfigs[stage];

  it('has the table with its stage name, TTL, and data protection as configured', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      TableName: `deskpipe-${stage}`,
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
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
    expect(Object.keys(functions)).toHaveLength(routes.length + 1 + workers.length);
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
    }
  });

  it('sets only the environment that is read: TABLE_NAME by the data layer (functions with table actions), NODE_OPTIONS by Node, the EMF namespace by lib/http/metrics.ts, the key-hash secret by the functions that hash API keys', () => {
    const functions = template.findResources('AWS::Lambda::Function') as Record<
      string,
      { Properties: { FunctionName: string; Environment: { Variables: Record<string, unknown> } } }
    >;
    const withTable = new Set([
      `deskpipe-${stage}-authorizer`,
      ...routes.filter((r) => r.tableActions.length > 0).map((r) => `deskpipe-${stage}-${r.name}`),
      ...workers.map((w) => `deskpipe-${stage}-${w.name}`),
    ]);
    // lib/accounts/key-hash.ts: the authorizer and the key routes (they make keys).
    const hashing = new Set([
      `deskpipe-${stage}-authorizer`,
      ...routes.filter((r) => r.scope === 'keys:manage').map((r) => `deskpipe-${stage}-${r.name}`),
    ]);
    for (const fn of Object.values(functions)) {
      const name = fn.Properties.FunctionName;
      expect(Object.keys(fn.Properties.Environment.Variables).sort(), name).toEqual([
        ...(hashing.has(name) ? ['API_KEY_HASH_SECRET'] : []),
        'NODE_OPTIONS',
        'POWERTOOLS_METRICS_NAMESPACE',
        // lib/email/senders.ts: the outbox sends with the stage's SES configuration set.
        ...(name === `deskpipe-${stage}-${emailOutboxWorker.name}` ? ['SES_CONFIGURATION_SET'] : []),
        ...(withTable.has(name) ? ['TABLE_NAME'] : []),
      ]);
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
type Statement = { Action: string | string[]; Resource: unknown };

/**
 * Every function's IAM statements, by the function's name (its stage prefix off): a policy's role is the role of
 * one function.
 */
function statementsByFunction(resources: Resource[]): Record<string, Statement[]> {
  const all = resources as (Resource & { id?: string })[];
  const functions = all.filter((r) => r.Type === 'AWS::Lambda::Function');
  const byRole = new Map<string, string>();
  for (const fn of functions) {
    const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    byRole.set(role, String(fn.Properties.FunctionName).replace(/^deskpipe-[a-z]+-/, ''));
  }
  const statements: Record<string, Statement[]> = {};
  for (const policy of all.filter((r) => r.Type === 'AWS::IAM::Policy')) {
    const roles = policy.Properties.Roles as { Ref: string }[];
    for (const { Ref } of roles) {
      const name = byRole.get(Ref);
      if (!name) throw new Error(`a policy of a role no function has: ${Ref}`);
      statements[name] = [
        ...(statements[name] ?? []),
        ...(policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
      ];
    }
  }
  return statements;
}

describe.each(STAGES)('production settings for %s', (stage) => {
  const { template, nagFindings } = synthStage(stage);
  const tableId = tableIdOf(template);
  const config = stageConfigs[stage];
  const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);

  it('cdk-nag (AwsSolutions) reports nothing unsuppressed', () => {
    expect(nagFindings).toEqual([]);
  });

  it('grants each function only its DynamoDB actions: on the table, an index to the due runner and the trash list only, the stream to the fan-out only', () => {
    const byFunction = statementsByFunction(resources);
    const onTable = (statement: Statement) =>
      JSON.stringify(statement.Resource) === JSON.stringify({ 'Fn::GetAtt': [tableId, 'Arn'] });
    const granted: Record<string, string> = {};
    for (const [name, statements] of Object.entries(byFunction)) {
      const dynamo = statements.filter((st) => [st.Action].flat().some((a) => a.startsWith('dynamodb:')));
      for (const statement of dynamo) {
        const actions = [statement.Action].flat();
        expect(actions).not.toContain('dynamodb:*');
        if (onTable(statement)) {
          expect(granted[name], `${name}: one statement on the table`).toBeUndefined();
          granted[name] = actions.sort().join(',');
        } else if (name === webhookDueWorker.name) {
          // The due index (gsi2) and, until its old entries are gone, gsi1: Query only.
          expect(statement).toMatchObject({
            Action: 'dynamodb:Query',
            Resource: ['gsi2', 'gsi1'].map((index) => ({
              'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, `/index/${index}`]],
            })),
          });
        } else if (name === slaBreachesWorker.name || name === emailOutboxWorker.name) {
          // The tickets' due index, the outbox's (gsi2): Query only.
          expect(statement).toMatchObject({
            Action: 'dynamodb:Query',
            Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, '/index/gsi2']] },
          });
        } else if (name === 'listTrash') {
          // The trash list (gsi1, newest deletion first): Query only.
          expect(statement).toMatchObject({
            Action: 'dynamodb:Query',
            Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, '/index/gsi1']] },
          });
        } else if (name === webhookStreamWorker.name) {
          // The table's stream, read by the event source mapping.
          expect(statement.Resource).toEqual({ 'Fn::GetAtt': [tableId, 'StreamArn'] });
          expect(
            actions.every((a) =>
              /^dynamodb:(DescribeStream|GetRecords|GetShardIterator|ListStreams)$/.test(a),
            ),
          ).toBe(true);
        } else {
          throw new Error(`${name}: a DynamoDB grant beyond the table: ${JSON.stringify(statement)}`);
        }
      }
    }
    const declared = Object.fromEntries(
      [
        ...routes.filter((r) => r.tableActions.length > 0),
        { name: 'authorizer', tableActions: authorizerTableActions },
        ...workers,
      ].map((fn) => [
        fn.name,
        fn.tableActions
          .map((a) => `dynamodb:${a}`)
          .sort()
          .join(','),
      ]),
    );
    expect(granted).toEqual(declared);
    const streamReaders = Object.entries(byFunction)
      .filter(([, statements]) => statements.some((st) => [st.Action].flat().includes('dynamodb:GetRecords')))
      .map(([name]) => name);
    expect(streamReaders).toEqual([webhookStreamWorker.name]);
  });

  it('keeps every log group for the stage retention, and writes JSON access logs', () => {
    const groups = resources.filter((r) => r.Type === 'AWS::Logs::LogGroup');
    expect(groups).toHaveLength(routes.length + 2 + workers.length);
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
    for (const name of ['authorizer', ...routes.map((r) => r.name), ...workers.map((w) => w.name)]) {
      expect(byName[`deskpipe-${stage}-${name}-errors`]?.Threshold).toBe(t.lambdaErrors);
      expect(byName[`deskpipe-${stage}-${name}-throttles`]?.Threshold).toBe(t.lambdaThrottles);
    }
    expect(byName[`deskpipe-${stage}-webhooks-stream-failures`]).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    // The breach runner that stopped running: no invocation in 5 minutes (missing data is a breach).
    expect(byName[`deskpipe-${stage}-sla-breaches-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    expect(alarms).toHaveLength(6 + 2 * (routes.length + 1 + workers.length));
    const withActions = alarms.filter((a) => Array.isArray(a.Properties.AlarmActions));
    expect(withActions).toHaveLength(config.alarmTopic ? alarms.length : 0);
  });

  it('outputs the API URL and the table name', () => {
    const outputs = Object.keys(template.toJSON().Outputs ?? {});
    expect(outputs).toEqual(expect.arrayContaining(['ApiUrl', 'TableName']));
  });
});

describe.each(STAGES)('webhook dispatcher for %s', (stage) => {
  const { template } = synthStage(stage);
  const tableId = tableIdOf(template);
  const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);
  const logicalId = (type: string, name: string) => {
    const found = Object.entries(template.findResources(type)).find(([, r]) =>
      JSON.stringify(r.Properties).includes(name),
    );
    if (!found) throw new Error(`no ${type} named ${name}`);
    return found[0];
  };
  const streamFunction = () =>
    logicalId('AWS::Lambda::Function', `deskpipe-${stage}-${webhookStreamWorker.name}"`);
  const dueFunction = () => logicalId('AWS::Lambda::Function', `deskpipe-${stage}-${webhookDueWorker.name}"`);
  const queue = () => logicalId('AWS::SQS::Queue', `deskpipe-${stage}-webhooks-stream-failures`);

  it("reserves the workers' concurrency from the stage config, and none for the API's functions", () => {
    const config = stageConfigs[stage];
    const reserved = Object.fromEntries(
      resources
        .filter((r) => r.Type === 'AWS::Lambda::Function')
        .map((r) => [String(r.Properties.FunctionName), r.Properties.ReservedConcurrentExecutions]),
    );
    expect(reserved[`deskpipe-${stage}-${webhookStreamWorker.name}`]).toBe(
      config.workerConcurrency.webhooksStream,
    );
    expect(reserved[`deskpipe-${stage}-${webhookDueWorker.name}`]).toBe(config.workerConcurrency.webhooksDue);
    expect(reserved[`deskpipe-${stage}-${slaBreachesWorker.name}`]).toBe(
      config.workerConcurrency.slaBreaches,
    );
    const others = Object.entries(reserved).filter(([name]) => !workers.some((w) => name.endsWith(w.name)));
    expect(others.length).toBeGreaterThan(0);
    for (const [name, value] of others) expect(value, name).toBeUndefined();
  });

  it('feeds the stream function new event items from the table stream: bisected, partial failures, bounded retries and age, failures to the queue', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: streamFunction() },
      EventSourceArn: { 'Fn::GetAtt': [tableId, 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: STREAM_RETRY_ATTEMPTS,
      MaximumRecordAgeInSeconds: STREAM_MAX_RECORD_AGE.toSeconds(),
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue(), 'Arn'] } } },
      FilterCriteria: {
        Filters: [
          {
            Pattern: JSON.stringify({
              eventName: ['INSERT'],
              dynamodb: { NewImage: { type: { S: ['event'] } } },
            }),
          },
        ],
      },
    });
    expect(STREAM_RETRY_ATTEMPTS).toBeLessThanOrEqual(10);
  });

  it('keeps failed stream batches in an encrypted queue that refuses anything but TLS, and the stream function may send there', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: `deskpipe-${stage}-webhooks-stream-failures`,
      SqsManagedSseEnabled: true,
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queue() }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sqs:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
    const senders = Object.entries(statementsByFunction(resources))
      .filter(([, statements]) =>
        statements.some(
          (st) =>
            [st.Action].flat().includes('sqs:SendMessage') &&
            JSON.stringify(st.Resource) === JSON.stringify({ 'Fn::GetAtt': [queue(), 'Arn'] }),
        ),
      )
      .map(([name]) => name);
    expect(senders).toEqual([webhookStreamWorker.name]);
  });

  it('runs the due function every minute, once (a missed minute is made up by the next), for longer than an API function', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [dueFunction(), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: `deskpipe-${stage}-${webhookDueWorker.name}`,
      Timeout: webhookDueWorker.timeoutSeconds,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: `deskpipe-${stage}-${webhookStreamWorker.name}`,
      Timeout: webhookStreamWorker.timeoutSeconds,
    });
  });

  it("runs the due function as the stage's pool of runners: one rule a runner, each handed its own place, with room for two runs of each", () => {
    const runners = stageConfigs[stage].webhookDueRunners;
    const rules = resources.filter(
      (r) =>
        r.Type === 'AWS::Events::Rule' &&
        JSON.stringify(r.Properties.Targets).includes(
          JSON.stringify({ 'Fn::GetAtt': [dueFunction(), 'Arn'] }),
        ),
    );
    expect(rules).toHaveLength(runners);
    const places = rules.map((r) =>
      JSON.parse(String((r.Properties.Targets as { Input: string }[])[0]?.Input)),
    );
    expect(places.sort((a, b) => a.runner - b.runner)).toEqual(
      Array.from({ length: runners }, (_, runner) => ({ runner, runners })),
    );
    expect(stageConfigs[stage].workerConcurrency.webhooksDue).toBeGreaterThanOrEqual(2 * runners);
  });

  it('runs the breach runner every minute, once, for most of the minute', () => {
    const breachFunction = logicalId('AWS::Lambda::Function', `deskpipe-${stage}-${slaBreachesWorker.name}"`);
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [breachFunction, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: `deskpipe-${stage}-${slaBreachesWorker.name}`,
      Timeout: slaBreachesWorker.timeoutSeconds,
    });
  });

  it('runs the outbox every minute, once, sending through SES with the stage configuration set only', () => {
    const outboxFunction = logicalId('AWS::Lambda::Function', `deskpipe-${stage}-${emailOutboxWorker.name}"`);
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [outboxFunction, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    const sets = template.findResources('AWS::SES::ConfigurationSet', {
      Properties: { Name: `deskpipe-${stage}-outbox` },
    });
    expect(Object.keys(sets)).toHaveLength(1);
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: `deskpipe-${stage}-${emailOutboxWorker.name}`,
      Environment: { Variables: Match.objectLike({ SES_CONFIGURATION_SET: { Ref: Object.keys(sets)[0] } }) },
    });
    const ses = Object.entries(statementsByFunction(resources)).flatMap(([name, statements]) =>
      statements
        .filter((st) => [st.Action].flat().some((a) => a.startsWith('ses:')))
        .map((st) => ({ name, statement: st })),
    );
    expect(ses.map((s) => s.name)).toEqual([emailOutboxWorker.name]);
    const resourcesOf = JSON.stringify(ses[0]?.statement.Resource);
    expect([ses[0]?.statement.Action].flat().sort()).toEqual(['ses:SendEmail', 'ses:SendRawEmail']);
    // The configuration set by its name (a Ref to it), and any identity: nothing else of SES.
    expect(resourcesOf).toContain(`:configuration-set/",${JSON.stringify({ Ref: Object.keys(sets)[0] })}`);
    expect(ses[0]?.statement.Resource).toHaveLength(2);
    expect(resourcesOf).toContain(':identity/*');
  });

  it('keeps the dispatcher functions out of the API', () => {
    const integrated = JSON.stringify(template.findResources('AWS::ApiGateway::Method'));
    expect(integrated).not.toContain(streamFunction());
    expect(integrated).not.toContain(dueFunction());
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
