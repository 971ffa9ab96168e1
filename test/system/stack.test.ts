import { App, Aspects, NestedStack, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { authorizerTableActions, holdsKeyHashSecret, routes } from '#functions/routes.ts';
import {
  CLEARING_RUN_MS,
  emailInboundQueueWorker,
  emailInboundWorker,
  emailOutboxWorker,
  erasureWorker,
  IMPORT_RUN_MS,
  IMPORT_STOP_MARGIN_MS,
  importRunnerWorker,
  organizationClearingWorker,
  PURGE_EVERY_MINUTES,
  PURGE_RUN_MS,
  purgeWorker,
  QUEUE_RUN_MS,
  slaBreachesWorker,
  ticketQueueWorker,
  webhookDueWorker,
  webhookStreamWorker,
  workers,
} from '#functions/workers.ts';
import { gatewayAnswers } from '#infra/api-contract.ts';
import { STAGES, stageConfigs } from '#infra/config.ts';
import { INBOUND_MAX_EVENT_AGE, INBOUND_RETRY_ATTEMPTS } from '#infra/constructs/failed-mail.ts';
import { UPLOAD_KEEP_DAYS, UPLOAD_PREFIX } from '#infra/constructs/import-storage.ts';
import {
  INBOUND_QUEUE_BATCH,
  INBOUND_QUEUE_MAX_RECEIVES,
  INBOUND_QUEUE_VISIBILITY,
  QUIET_WAIT_ALARM_SECONDS,
} from '#infra/constructs/inbound-queue.ts';
import { STREAM_MAX_RECORD_AGE, STREAM_RETRY_ATTEMPTS } from '#infra/constructs/webhook-dispatcher.ts';
import { EDGE_PLANS, PLAN_EDGE_LIMITS } from '#lib/accounts/edge-limits.ts';
import {
  declaredAuthOf,
  lambdaAuthOf,
  lambdaRoutesOf,
  synthStage,
  type TemplateJson,
  templateFigures,
} from '#test/support/synth.ts';

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

  it("throttles each account at the edge: a usage plan per plan at the plans' figures on the stage, the account's API key named by the authorizer, every keyed method requiring it", () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { ApiKeySourceType: 'AUTHORIZER' });
    const plans = Object.values(template.findResources('AWS::ApiGateway::UsagePlan')).map((p) => ({
      name: p.Properties.UsagePlanName,
      throttle: p.Properties.Throttle,
      stages: p.Properties.ApiStages.length,
    }));
    expect(plans).toEqual(
      EDGE_PLANS.map((plan) => ({
        name: `deskpipe-${stage}-${plan}`,
        throttle: {
          RateLimit: PLAN_EDGE_LIMITS[plan].rateLimit,
          BurstLimit: PLAN_EDGE_LIMITS[plan].burstLimit,
        },
        stages: 1,
      })),
    );
    const methods = Object.values(template.findResources('AWS::ApiGateway::Method')).map((m) => ({
      keyed: m.Properties.AuthorizationType === 'CUSTOM',
      keyRequired: m.Properties.ApiKeyRequired === true,
    }));
    expect(methods.filter((m) => m.keyed)).toHaveLength(routes.filter((r) => r.auth).length);
    for (const method of methods) expect(method.keyRequired).toBe(method.keyed && config.edgeKeysRequired);
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

  it('sets only the environment that is read: TABLE_NAME by the data layer (functions with table actions), NODE_OPTIONS by Node, the EMF namespace by lib/http/metrics.ts, the key-hash secret by the functions that hash API keys, MAIL_BUCKET by the mail store, the imports key and upload bucket by the import functions', () => {
    const functions = template.findResources('AWS::Lambda::Function') as Record<
      string,
      { Properties: { FunctionName: string; Environment: { Variables: Record<string, unknown> } } }
    >;
    const withTable = new Set([
      `deskpipe-${stage}-authorizer`,
      ...routes.filter((r) => r.tableActions.length > 0).map((r) => `deskpipe-${stage}-${r.name}`),
      ...workers.map((w) => `deskpipe-${stage}-${w.name}`),
    ]);
    // lib/accounts/key-hash.ts: the authorizer, and the routes and workers the declarations give the secret
    // (holdsKeyHashSecret, keyHashSecret; test/support/table-actions-setup.ts fails a test in which any other takes a
    // keyed hash).
    const hashing = new Set([
      `deskpipe-${stage}-authorizer`,
      ...workers.filter((w) => w.keyHashSecret).map((w) => `deskpipe-${stage}-${w.name}`),
      ...routes.filter(holdsKeyHashSecret).map((r) => `deskpipe-${stage}-${r.name}`),
    ]);
    // lib/data/mail-store.ts: the inbound and processing functions, the erasures, the purge, the download routes
    // and the import runner (it copies attachments in).
    const withMail = new Set([
      `deskpipe-${stage}-${emailInboundWorker.name}`,
      `deskpipe-${stage}-${emailInboundQueueWorker.name}`,
      `deskpipe-${stage}-${erasureWorker.name}`,
      `deskpipe-${stage}-${purgeWorker.name}`,
      `deskpipe-${stage}-${importRunnerWorker.name}`,
      ...routes.filter((r) => r.mailObjects).map((r) => `deskpipe-${stage}-${r.name}`),
    ]);
    // lib/imports/sealers.ts, lib/data/imports/uploads.ts: the function that starts imports and the one that runs them.
    const importing = new Set([
      `deskpipe-${stage}-createImport`,
      `deskpipe-${stage}-${importRunnerWorker.name}`,
    ]);
    for (const fn of Object.values(functions)) {
      const name = fn.Properties.FunctionName;
      expect(Object.keys(fn.Properties.Environment.Variables).sort(), name).toEqual([
        ...(hashing.has(name) ? ['API_KEY_HASH_SECRET'] : []),
        // lib/email/outbox/pace.ts: the outbox is paced to the stage's SES sending quota.
        ...(name === `deskpipe-${stage}-${emailOutboxWorker.name}` ? ['EMAIL_SEND_RATE'] : []),
        ...(importing.has(name) ? ['IMPORT_KMS_KEY', 'IMPORT_UPLOAD_BUCKET'] : []),
        // lib/email/sqs-inbound-queue.ts: the inbound function queues each account's copy of a mail.
        ...(name === `deskpipe-${stage}-${emailInboundWorker.name}` ? ['INBOUND_QUEUE_URL'] : []),
        ...(withMail.has(name) ? ['MAIL_BUCKET'] : []),
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

/** A bucket as infra/constructs/private-bucket.ts makes it: private, SSE-S3, each object expired after `days`. */
const privateBucket = (days: number) => ({
  BucketEncryption: {
    ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
  },
  PublicAccessBlockConfiguration: {
    BlockPublicAcls: true,
    BlockPublicPolicy: true,
    IgnorePublicAcls: true,
    RestrictPublicBuckets: true,
  },
  LifecycleConfiguration: {
    Rules: [
      Match.objectLike({
        ExpirationInDays: days,
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
        Status: 'Enabled',
      }),
    ],
  },
});
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

  it('grants each function only its DynamoDB actions: on the table, Query on the indexes it declares, the stream to the fan-out only', () => {
    const byFunction = statementsByFunction(resources);
    const onTable = (statement: Statement) =>
      JSON.stringify(statement.Resource) === JSON.stringify({ 'Fn::GetAtt': [tableId, 'Arn'] });
    const granted: Record<string, string> = {};
    const indexQueries: Record<string, readonly string[]> = Object.fromEntries(
      [...routes, ...workers].map((fn) => [fn.name, ('indexQueries' in fn && fn.indexQueries) || []]),
    );
    const queried: Record<string, readonly string[]> = {};
    for (const [name, statements] of Object.entries(byFunction)) {
      const dynamo = statements.filter((st) => [st.Action].flat().some((a) => a.startsWith('dynamodb:')));
      for (const statement of dynamo) {
        const actions = [statement.Action].flat();
        expect(actions).not.toContain('dynamodb:*');
        if (onTable(statement)) {
          expect(granted[name], `${name}: one statement on the table`).toBeUndefined();
          granted[name] = actions.sort().join(',');
        } else if (indexQueries[name]?.length) {
          // The indexes the function declares (functions/routes.ts, functions/workers.ts): Query only.
          const onIndex = (index: string) => ({
            'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, `/index/${index}`]],
          });
          const declaredIndexes = indexQueries[name] ?? [];
          expect(statement).toMatchObject({
            Action: 'dynamodb:Query',
            Resource:
              declaredIndexes.length === 1 ? onIndex(declaredIndexes[0] ?? '') : declaredIndexes.map(onIndex),
          });
          queried[name] = declaredIndexes;
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
    expect(queried).toEqual(Object.fromEntries(Object.entries(indexQueries).filter(([, i]) => i.length > 0)));
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
    // Every stack's: the service's alarms in their nested stack, the runners' and queues' beside what they watch.
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
    // The purge that stopped running: no invocation in an hour.
    expect(byName[`deskpipe-${stage}-trash-purge-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Period: 3600,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    // The erasure runner that stopped running: no invocation in 15 minutes (erasures stay running).
    expect(byName[`deskpipe-${stage}-erasures-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Period: 900,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    // The organization clearing runner that stopped running: no invocation in 15 minutes.
    expect(byName[`deskpipe-${stage}-organization-clearing-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Period: 900,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    // The queue runner that stopped running: no invocation in 15 minutes (queued tickets wait).
    expect(byName[`deskpipe-${stage}-ticket-queue-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Period: 900,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    // The import runner that stopped running: no invocation in 15 minutes (imports wait).
    expect(byName[`deskpipe-${stage}-import-runner-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Period: 900,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    // The outbox that stopped running: no invocation in 5 minutes (replies are not mailed).
    expect(byName[`deskpipe-${stage}-email-outbox-not-running`]).toMatchObject({
      MetricName: 'Invocations',
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    // Received mail the inbound function gave up on (kept in the bucket, its event in the queue).
    expect(byName[`deskpipe-${stage}-email-inbound-failures`]).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    // Mail the processing function gave up on (its copy kept in the bucket, its message in the dead-letter queue).
    expect(byName[`deskpipe-${stage}-email-inbound-queue-failures`]).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    // The quiet accounts' mail waiting (the fair queue's measure, which leaves out a flooding account's).
    expect(byName[`deskpipe-${stage}-email-inbound-quiet-wait`]).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessageInQuietGroups',
      Statistic: 'Maximum',
      Threshold: QUIET_WAIT_ALARM_SECONDS,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    expect(alarms).toHaveLength(15 + 2 * (routes.length + 1 + workers.length));
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
    for (const worker of workers) {
      expect(reserved[`deskpipe-${stage}-${worker.name}`], worker.name).toBe(
        config.workerConcurrency[worker.name as keyof typeof config.workerConcurrency],
      );
    }
    const others = Object.entries(reserved).filter(([name]) => !workers.some((w) => name.endsWith(w.name)));
    expect(others.length).toBeGreaterThan(0);
    for (const [name, value] of others) expect(value, name).toBeUndefined();
  });

  it('feeds the stream function new event items from the table stream: bisected, partial failures, bounded retries and age, failures to the queue', () => {
    // The stream's and the inbound queue's (its own test below).
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
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

  // The scheduled runners (infra/constructs/scheduled-runner.ts), by declaration: the worker and its schedule.
  for (const [runner, schedule] of [
    [slaBreachesWorker, 'rate(1 minute)'],
    [purgeWorker, `rate(${PURGE_EVERY_MINUTES} minutes)`],
    [organizationClearingWorker, 'rate(1 minute)'],
    [ticketQueueWorker, 'rate(1 minute)'],
  ] as const) {
    it(`runs ${runner.name} on its schedule (${schedule}), once (a missed run is made up by the next), within its timeout`, () => {
      const fn = logicalId('AWS::Lambda::Function', `deskpipe-${stage}-${runner.name}"`);
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: schedule,
        Targets: [
          Match.objectLike({
            Arn: { 'Fn::GetAtt': [fn, 'Arn'] },
            RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
          }),
        ],
      });
      template.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: `deskpipe-${stage}-${runner.name}`,
        Timeout: runner.timeoutSeconds,
      });
    });
  }
  it('lets the organization clearing run end before its timeout', () => {
    expect(CLEARING_RUN_MS + 30_000).toBeLessThanOrEqual(organizationClearingWorker.timeoutSeconds * 1000);
  });
  it('lets the queue run end before its timeout', () => {
    expect(QUEUE_RUN_MS + 30_000).toBeLessThanOrEqual(ticketQueueWorker.timeoutSeconds * 1000);
  });
  it('lets the purge run end before its timeout, and the next start after it', () => {
    expect(PURGE_RUN_MS + 30_000).toBeLessThanOrEqual(purgeWorker.timeoutSeconds * 1000);
    expect(purgeWorker.timeoutSeconds).toBeLessThan(PURGE_EVERY_MINUTES * 60);
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
      Environment: {
        Variables: Match.objectLike({
          SES_CONFIGURATION_SET: { Ref: Object.keys(sets)[0] },
          EMAIL_SEND_RATE: String(stageConfigs[stage].mail.sendRatePerSecond),
        }),
      },
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

  it('sends SES bounces and complaints back: the configuration set to the feedback topic (TLS only), to the inbound function', () => {
    const [setId] = Object.keys(
      template.findResources('AWS::SES::ConfigurationSet', {
        Properties: { Name: `deskpipe-${stage}-outbox` },
      }),
    );
    const topics = template.findResources('AWS::SNS::Topic', {
      Properties: { TopicName: `deskpipe-${stage}-email-feedback` },
    });
    const [topicId] = Object.keys(topics);
    expect(topicId).toBeDefined();
    template.hasResourceProperties('AWS::SES::ConfigurationSetEventDestination', {
      ConfigurationSetName: { Ref: setId },
      EventDestination: Match.objectLike({
        Enabled: true,
        MatchingEventTypes: ['bounce', 'complaint'],
        SnsDestination: { TopicARN: { Ref: topicId } },
      }),
    });
    const inbound = logicalId('AWS::Lambda::Function', `deskpipe-${stage}-${emailInboundWorker.name}"`);
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      TopicArn: { Ref: topicId },
      Endpoint: { 'Fn::GetAtt': [inbound, 'Arn'] },
    });
    // SES may publish from this configuration set only; nothing but TLS.
    const policy = JSON.stringify(template.findResources('AWS::SNS::TopicPolicy'));
    expect(policy).toContain('ses.amazonaws.com');
    expect(policy).toContain(':configuration-set/');
    expect(policy).toContain('aws:SecureTransport');
    // Encrypted at rest with a key of its own (rotated), which SES may use for this configuration set's
    // notifications to this topic only.
    const keyRef = (topics[topicId as string] as Resource).Properties.KmsMasterKeyId as {
      'Fn::GetAtt': string[];
    };
    const [keyId] = keyRef['Fn::GetAtt'] ?? [];
    const key = template.toJSON().Resources[keyId as string] as Resource;
    expect(key.Type).toBe('AWS::KMS::Key');
    expect(key.Properties.EnableKeyRotation).toBe(true);
    const statements = (key.Properties.KeyPolicy as { Statement: Record<string, unknown>[] }).Statement;
    const forSes = statements.filter((st) => JSON.stringify(st.Principal).includes('ses.amazonaws.com'));
    expect(forSes).toHaveLength(1);
    expect([forSes[0]?.Action].flat().sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey*']);
    const conditions = JSON.stringify(forSes[0]?.Condition);
    expect(conditions).toContain('aws:SourceAccount');
    expect(conditions).toContain(':configuration-set/');
    expect(conditions).toContain('kms:EncryptionContext:aws:sns:topicArn');
  });

  it('keeps the dispatcher functions out of the API', () => {
    const integrated = JSON.stringify(template.findResources('AWS::ApiGateway::Method'));
    expect(integrated).not.toContain(streamFunction());
    expect(integrated).not.toContain(dueFunction());
  });
});

describe.each(STAGES)('receiving mail for %s', (stage) => {
  const { template } = synthStage(stage);
  const config = stageConfigs[stage];
  const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);
  const only = (type: string) => {
    const found = Object.entries(template.findResources(type));
    expect(found, type).toHaveLength(1);
    return found[0] as [string, Resource];
  };
  // The mail bucket: the one SES writes to (the import upload bucket is the other: 'imports for %s').
  const mailBucket = () =>
    Object.entries(template.findResources('AWS::S3::Bucket')).find(([, r]) =>
      JSON.stringify(r.Properties).includes('mail-kept-days'),
    ) as [string, Resource & { DeletionPolicy?: string }];
  const [bucketId] = mailBucket();
  const [functionId] = Object.entries(template.findResources('AWS::Lambda::Function')).find(([, r]) =>
    JSON.stringify(r.Properties).includes(`deskpipe-${stage}-${emailInboundWorker.name}"`),
  ) as [string, Resource];
  const objects = (prefix: string) => ({
    'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, `/${prefix}*`]],
  });

  it('keeps raw mail in a private, encrypted, TLS-only bucket that expires every object after the configured days', () => {
    expect(config.mail.keepDays).toBe(30);
    template.hasResourceProperties('AWS::S3::Bucket', privateBucket(config.mail.keepDays));
    expect(mailBucket()[1].DeletionPolicy).toBe(config.protectData ? 'Retain' : 'Delete');
    const [, policy] = Object.entries(template.findResources('AWS::S3::BucketPolicy')).find(
      ([, r]) => JSON.stringify(r.Properties.Bucket) === JSON.stringify({ Ref: bucketId }),
    ) as [string, Resource];
    const statements = (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        // SES, for this account only, writes under raw/ only.
        expect.objectContaining({
          Effect: 'Allow',
          Action: 's3:PutObject',
          Principal: { Service: 'ses.amazonaws.com' },
          Resource: objects('raw/'),
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
        }),
      ]),
    );
  });

  it("has the stage's receipt rule set: one rule for its domain, scanned, TLS only, the raw mail kept first and then the inbound function invoked asynchronously", () => {
    template.hasResourceProperties('AWS::SES::ReceiptRuleSet', { RuleSetName: `deskpipe-${stage}-inbound` });
    const [, rule] = only('AWS::SES::ReceiptRule');
    expect(rule.Properties.Rule).toMatchObject({
      Enabled: true,
      Recipients: [config.mail.domain],
      ScanEnabled: true,
      TlsPolicy: 'Require',
      Actions: [
        { S3Action: { BucketName: { Ref: bucketId }, ObjectKeyPrefix: 'raw/' } },
        { LambdaAction: { FunctionArn: { 'Fn::GetAtt': [functionId, 'Arn'] }, InvocationType: 'Event' } },
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [functionId, 'Arn'] },
      Principal: 'ses.amazonaws.com',
      SourceAccount: { Ref: 'AWS::AccountId' },
    });
  });

  it('retries a failed mail twice, then keeps its event in an encrypted queue whose depth is alarmed', () => {
    const [queueId] = Object.entries(template.findResources('AWS::SQS::Queue')).find(([, r]) =>
      JSON.stringify(r.Properties).includes(`deskpipe-${stage}-email-inbound-failures`),
    ) as [string, Resource];
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: functionId },
      MaximumRetryAttempts: INBOUND_RETRY_ATTEMPTS,
      MaximumEventAgeInSeconds: INBOUND_MAX_EVENT_AGE.toSeconds(),
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueId, 'Arn'] } } },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: `deskpipe-${stage}-email-inbound-failures`,
      SqsManagedSseEnabled: true,
    });
  });

  it("grants S3 to the functions that touch mail only: the inbound function copies SES's raw/ object to each account's mail/ and removes it, the processing function reads mail/ and writes attachments/; the erasures rewrite and remove, the purge removes, the accounts' copies; each download route reads its own prefix; the import runner writes attachments/", () => {
    const s3 = Object.fromEntries(
      Object.entries(statementsByFunction(resources))
        .map(([name, statements]) => [
          name,
          statements.filter(
            (st) =>
              [st.Action].flat().some((a) => a.startsWith('s3:')) &&
              JSON.stringify(st.Resource).includes(`"${bucketId}"`),
          ),
        ])
        .filter(([, statements]) => (statements as Statement[]).length > 0),
    );
    const bucketArn = { 'Fn::GetAtt': [bucketId, 'Arn'] };
    const reader = (prefix: string) => [
      { Action: 's3:GetObject', Effect: 'Allow', Resource: objects(prefix) },
      { Action: 's3:ListBucket', Effect: 'Allow', Resource: bucketArn },
    ];
    const copies = [objects('mail/'), objects('attachments/')];
    expect(s3).toEqual({
      // It routes: sizes SES's object, copies it to each account's mail/ (HeadObject on the copy first), removes it.
      [emailInboundWorker.name]: [
        { Action: ['s3:GetObject', 's3:DeleteObject'], Effect: 'Allow', Resource: objects('raw/') },
        { Action: ['s3:GetObject', 's3:PutObject'], Effect: 'Allow', Resource: objects('mail/') },
        { Action: 's3:ListBucket', Effect: 'Allow', Resource: bucketArn },
      ],
      // It processes an account's copy: reads it, writes its attachments; never SES's raw/.
      [emailInboundQueueWorker.name]: [
        { Action: 's3:GetObject', Effect: 'Allow', Resource: objects('mail/') },
        {
          Action: ['s3:PutObject', 's3:AbortMultipartUpload'],
          Effect: 'Allow',
          Resource: objects('attachments/'),
        },
        { Action: 's3:ListBucket', Effect: 'Allow', Resource: bucketArn },
      ],
      // The erasure runner rewrites a person's raw mail and attachments as `[erased]`, and removes those of a
      // ticket it purges; the trash's purge removes those of the tickets it purges.
      [erasureWorker.name]: [
        { Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Effect: 'Allow', Resource: copies },
        { Action: 's3:ListBucket', Effect: 'Allow', Resource: bucketArn },
      ],
      [purgeWorker.name]: [
        { Action: 's3:DeleteObject', Effect: 'Allow', Resource: copies },
        { Action: 's3:ListBucket', Effect: 'Allow', Resource: bucketArn },
      ],
      // The import runner copies a source's attachments in (HeadObject first: one kept already is not fetched again).
      [importRunnerWorker.name]: [
        {
          Action: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload'],
          Effect: 'Allow',
          Resource: objects('attachments/'),
        },
        { Action: 's3:ListBucket', Effect: 'Allow', Resource: bucketArn },
      ],
      ...Object.fromEntries(
        routes
          .filter((r) => r.mailObjects)
          .map((r) => [r.name, reader(r.mailObjects === 'raw' ? 'mail/' : 'attachments/')]),
      ),
    });
    expect(routes.filter((r) => r.mailObjects).map((r) => r.name)).toEqual([
      'getMessageRaw',
      'getMessageAttachment',
    ]);
  });

  it("queues each account's copy in a standard queue shared fairly by account (no FIFO: the group is the fair share's tenant), encrypted, TLS only, its visibility 6 × the processing function's timeout, a mail moved to an alarmed dead-letter queue after its receives", () => {
    const queueOf = (name: string) =>
      Object.entries(template.findResources('AWS::SQS::Queue')).find(
        ([, r]) => r.Properties.QueueName === name,
      ) as [string, Resource];
    const [queueId, queue] = queueOf(`deskpipe-${stage}-email-inbound`);
    const [deadId, dead] = queueOf(`deskpipe-${stage}-email-inbound-queue-failures`);
    expect(queue.Properties).toEqual({
      QueueName: `deskpipe-${stage}-email-inbound`,
      SqsManagedSseEnabled: true,
      VisibilityTimeout: INBOUND_QUEUE_VISIBILITY.toSeconds(),
      MessageRetentionPeriod: 14 * 24 * 3600,
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [deadId, 'Arn'] },
        maxReceiveCount: INBOUND_QUEUE_MAX_RECEIVES,
      },
    });
    expect(INBOUND_QUEUE_VISIBILITY.toSeconds()).toBeGreaterThanOrEqual(
      6 * emailInboundQueueWorker.timeoutSeconds,
    );
    expect(dead.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 24 * 3600,
    });
    for (const id of [queueId, deadId]) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: id }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `deskpipe-${stage}-email-inbound-queue-failures`,
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [deadId, 'QueueName'] } }],
      Threshold: 1,
    });
  });

  it('feeds the processing function batches of the inbound queue: partial failures reported, never more at once than its reserved concurrency', () => {
    const [queueId] = Object.entries(template.findResources('AWS::SQS::Queue')).find(
      ([, r]) => r.Properties.QueueName === `deskpipe-${stage}-email-inbound`,
    ) as [string, Resource];
    const [processingId] = Object.entries(template.findResources('AWS::Lambda::Function')).find(([, r]) =>
      JSON.stringify(r.Properties).includes(`deskpipe-${stage}-${emailInboundQueueWorker.name}"`),
    ) as [string, Resource];
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).filter(
      (r) =>
        JSON.stringify(r.Properties.EventSourceArn) === JSON.stringify({ 'Fn::GetAtt': [queueId, 'Arn'] }),
    );
    expect(mappings.map((m) => m.Properties)).toEqual([
      {
        FunctionName: { Ref: processingId },
        EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
        BatchSize: INBOUND_QUEUE_BATCH,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: config.workerConcurrency.emailInboundQueue },
      },
    ]);
    // The event source mapping's pollers start at 5 batches: a smaller reservation would throttle them.
    expect(config.workerConcurrency.emailInboundQueue).toBeGreaterThanOrEqual(5);
  });

  it('grants SQS least: the inbound function sends to the inbound queue (and its failed events to the failed-mail queue) only, the processing function consumes it only, nothing else touches either', () => {
    const queueArn = (name: string) => {
      const [id] = Object.entries(template.findResources('AWS::SQS::Queue')).find(
        ([, r]) => r.Properties.QueueName === name,
      ) as [string, Resource];
      return JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] });
    };
    const inbound = queueArn(`deskpipe-${stage}-email-inbound`);
    const failedMail = queueArn(`deskpipe-${stage}-email-inbound-failures`);
    const dead = queueArn(`deskpipe-${stage}-email-inbound-queue-failures`);
    const onMailQueues = Object.fromEntries(
      Object.entries(statementsByFunction(resources))
        .map(([name, statements]) => [
          name,
          statements
            .filter((st) => [inbound, failedMail, dead].includes(JSON.stringify(st.Resource)))
            .map((st) => ({ actions: [st.Action].flat().sort(), queue: JSON.stringify(st.Resource) }))
            .sort((x, y) => x.queue.localeCompare(y.queue)),
        ])
        .filter(([, statements]) => (statements as unknown[]).length > 0),
    );
    expect(onMailQueues).toEqual({
      [emailInboundWorker.name]: [
        // Lambda's on-failure destination of its asynchronous invocations (CDK's grant of sending).
        { actions: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'], queue: failedMail },
        { actions: ['sqs:SendMessage'], queue: inbound },
      ].sort((x, y) => x.queue.localeCompare(y.queue)),
      [emailInboundQueueWorker.name]: [
        {
          actions: [
            'sqs:ChangeMessageVisibility',
            'sqs:DeleteMessage',
            'sqs:GetQueueAttributes',
            'sqs:GetQueueUrl',
            'sqs:ReceiveMessage',
          ],
          queue: inbound,
        },
      ],
    });
  });

  it('treats every media type as binary, so a base64 answer (raw mail, an attachment) goes out as its bytes', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { BinaryMediaTypes: ['*/*'] });
  });

  it('outputs the mail bucket and the rule set to activate', () => {
    const outputs = Object.keys(template.toJSON().Outputs ?? {});
    expect(outputs).toEqual(expect.arrayContaining(['MailBucketName', 'MailReceiptRuleSet']));
  });
});

/**
 * CloudFormation's quotas of one template: 500 resources, 200 parameters, 200 outputs, 60 dynamic references (each
 * function given the key-hash secret holds one). Every nested stack is a template of its own, and every reference
 * across stacks is a parameter of one and an output of another. Resources are held to 400: a stack that passes it
 * is split before it meets the quota a deploy would (docs/deploy.md, "Stacks").
 */
const QUOTAS = { resources: 400, parameters: 200, outputs: 200, dynamicReferences: 60 };

describe.each(STAGES)('imports for %s', (stage) => {
  const { template } = synthStage(stage);
  const config = stageConfigs[stage];
  const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);
  const byFunction = statementsByFunction(resources);
  const oneOf = (type: string, marker: string) => {
    const found = Object.entries(template.findResources(type)).filter(([, r]) =>
      JSON.stringify(r.Properties).includes(marker),
    );
    expect(found, `${type} ${marker}`).toHaveLength(1);
    return found[0] as [string, Resource & { DeletionPolicy?: string }];
  };
  const [keyId, key] = oneOf('AWS::KMS::Key', 'import jobs');
  const [uploadsId, uploads] = oneOf('AWS::S3::Bucket', 'uploads-kept-days');
  const keyArn = { 'Fn::GetAtt': [keyId, 'Arn'] };
  const uploadsArn = { 'Fn::GetAtt': [uploadsId, 'Arn'] };
  const naming = (id: string) => (st: Statement) => JSON.stringify(st.Resource).includes(`"${id}"`);
  const grantsOn = (id: string) =>
    Object.fromEntries(
      Object.entries(byFunction)
        .map(([name, statements]) => [name, statements.filter(naming(id))] as const)
        .filter(([, statements]) => statements.length > 0),
    );
  const importFunction = (name: string) =>
    Object.values(template.findResources('AWS::Lambda::Function')).find(
      (r) => r.Properties.FunctionName === `deskpipe-${stage}-${name}`,
    ) as { Properties: { Timeout: number; Environment: { Variables: Record<string, unknown> } } };

  it("seals credentials under a KMS key of the stage's own: rotated, kept as the stage keeps its data, named by an alias, its policy the account's alone", () => {
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe(config.protectData ? 'Retain' : 'Delete');
    template.hasResourceProperties('AWS::KMS::Alias', {
      AliasName: `alias/deskpipe-${stage}-import-secrets`,
      TargetKeyId: keyArn,
    });
    // No service and no other principal in the key's policy: who may use it is decided by IAM (the grants below).
    const principals = (key.Properties.KeyPolicy as { Statement: { Principal: unknown }[] }).Statement.map(
      (st) => JSON.stringify(st.Principal),
    );
    expect(principals).toEqual([expect.stringContaining(':root')]);
  });

  it('lets createImport only make data keys and the import runner only unwrap them, each with an encryption context of {account, job}; no other function may use the key, nor decrypt with any', () => {
    const onlyContext = {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'job'] },
      Null: { 'kms:EncryptionContextKeys': 'false' },
    };
    expect(grantsOn(keyId)).toEqual({
      createImport: [
        { Action: 'kms:GenerateDataKey', Effect: 'Allow', Resource: keyArn, Condition: onlyContext },
      ],
      [importRunnerWorker.name]: [
        { Action: 'kms:Decrypt', Effect: 'Allow', Resource: keyArn, Condition: onlyContext },
      ],
    });
    const decrypting = Object.entries(byFunction)
      .filter(([, statements]) =>
        statements.some((st) => [st.Action].flat().some((a) => a === 'kms:Decrypt' || a === 'kms:*')),
      )
      .map(([name]) => name);
    expect(decrypting).toEqual([importRunnerWorker.name]);
  });

  it('keeps ndjson uploads in a private, encrypted, TLS-only bucket that expires each file after its days', () => {
    expect(UPLOAD_KEEP_DAYS).toBe(7);
    template.hasResource('AWS::S3::Bucket', { Properties: privateBucket(UPLOAD_KEEP_DAYS) });
    expect(uploads.Properties.LifecycleConfiguration).toEqual({
      Rules: [expect.objectContaining({ Id: 'uploads-kept-days', ExpirationInDays: UPLOAD_KEEP_DAYS })],
    });
    expect(uploads.DeletionPolicy).toBe(config.protectData ? 'Retain' : 'Delete');
    const [, policy] = Object.entries(template.findResources('AWS::S3::BucketPolicy')).find(
      ([, r]) => JSON.stringify(r.Properties.Bucket) === JSON.stringify({ Ref: uploadsId }),
    ) as [string, Resource];
    expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('aws:SecureTransport');
  });

  it('grants the uploads least: createImport may PutObject under imports/ (the presigned PUT is signed by its role), the import runner GetObject there and ListBucket (a file not there yet is a 404); nothing else touches the bucket', () => {
    const files = { 'Fn::Join': ['', [uploadsArn, `/${UPLOAD_PREFIX}*`]] };
    expect(grantsOn(uploadsId)).toEqual({
      createImport: [{ Action: 's3:PutObject', Effect: 'Allow', Resource: files }],
      [importRunnerWorker.name]: [
        { Action: 's3:GetObject', Effect: 'Allow', Resource: files },
        { Action: 's3:ListBucket', Effect: 'Allow', Resource: uploadsArn },
      ],
    });
  });

  it('names the key and the upload bucket to the import functions, and the mail bucket to the runner', () => {
    const [mailId] = oneOf('AWS::S3::Bucket', 'mail-kept-days');
    for (const name of ['createImport', importRunnerWorker.name]) {
      expect(importFunction(name).Properties.Environment.Variables, name).toMatchObject({
        IMPORT_KMS_KEY: keyArn,
        IMPORT_UPLOAD_BUCKET: { Ref: uploadsId },
      });
    }
    expect(importFunction(importRunnerWorker.name).Properties.Environment.Variables.MAIL_BUCKET).toEqual({
      Ref: mailId,
    });
    expect(Object.keys(template.toJSON().Outputs ?? {})).toContain('ImportUploadBucketName');
  });

  it('runs the import runner every minute, once, and ends each run before its timeout: steps start for IMPORT_RUN_MS and those in flight are cut IMPORT_STOP_MARGIN_MS before it', () => {
    const fnId = Object.entries(template.findResources('AWS::Lambda::Function')).find(
      ([, r]) => r.Properties.FunctionName === `deskpipe-${stage}-${importRunnerWorker.name}`,
    )?.[0];
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [fnId, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    expect(importFunction(importRunnerWorker.name).Properties.Timeout).toBe(
      importRunnerWorker.timeoutSeconds,
    );
    // Lambda's longest timeout; a step started last still has its slowest page's 10 minutes (docs/imports.md).
    expect(importRunnerWorker.timeoutSeconds).toBeLessThanOrEqual(900);
    const stepBudgetMs = importRunnerWorker.timeoutSeconds * 1000 - IMPORT_STOP_MARGIN_MS - IMPORT_RUN_MS;
    expect(stepBudgetMs).toBeGreaterThanOrEqual(10 * 60_000);
  });
});

describe.each(STAGES)("CloudFormation's quotas for %s", (stage) => {
  const { stackTemplates, template } = synthStage(stage);

  it('reads the whole stage in one template: each Ref and Fn::GetAtt names a resource of it, whichever stack holds it (test/support/synth.ts)', () => {
    const json = template.toJSON() as TemplateJson;
    const named = new Set([...Object.keys(json.Resources), ...Object.keys(json.Parameters ?? {})]);
    const dangling: string[] = [];
    const walk = (value: unknown): void => {
      // An array's elements are its values.
      if (value === null || typeof value !== 'object') return;
      const { Ref: ref, 'Fn::GetAtt': getAtt } = value as { Ref?: unknown; 'Fn::GetAtt'?: unknown };
      if (typeof ref === 'string' && !ref.startsWith('AWS::') && !named.has(ref)) dangling.push(ref);
      if (Array.isArray(getAtt) && !named.has(String(getAtt[0]))) dangling.push(getAtt.join('.'));
      for (const inner of Object.values(value)) walk(inner);
    };
    walk([json.Resources, json.Outputs]);
    expect(dangling).toEqual([]);
    expect(Object.keys(stackTemplates).length).toBeGreaterThan(1);
  });

  it.each(Object.keys(stackTemplates))('%s stays within them', (path) => {
    const figures = templateFigures(stackTemplates[path] as TemplateJson);
    for (const [quota, limit] of Object.entries(QUOTAS)) {
      expect(figures[quota as keyof typeof QUOTAS], `${path}: ${quota}`).toBeLessThanOrEqual(limit);
    }
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

  it("reports a nested stack's finding as its parent's (the stage's parts are nested stacks)", () => {
    const app = new App();
    const stack = new Stack(app, 'nag-probe');
    new RestApi(new NestedStack(stack, 'Part'), 'Open').root.addMethod('GET');
    Aspects.of(app).add(new AwsSolutionsChecks());
    const findings = Annotations.fromStack(stack).findError(
      '*',
      Match.stringLikeRegexp('AwsSolutions-APIG4'),
    );
    expect(findings.map((f) => f.id)).toEqual(['/nag-probe/Part/Open/Default/GET/Resource']);
  });
});
