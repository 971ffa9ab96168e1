import { join } from 'node:path';
import { CfnOutput, Duration, NestedStack, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AuthorizationType,
  LambdaIntegration,
  LogGroupLogDestination,
  MockIntegration,
  PassthroughBehavior,
  ResponseType,
  RestApi,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import { AttributeType, Billing, ProjectionType, StreamViewType, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import {
  authorizerEntry,
  authorizerTableActions,
  holdsKeyHashSecret,
  methodsOf,
  paths,
  routes,
} from '#functions/routes.ts';
import {
  emailInboundWorker,
  emailOutboxWorker,
  erasureWorker,
  PURGE_EVERY_MINUTES,
  purgeWorker,
  slaBreachesWorker,
  webhookDueWorker,
  webhookStreamWorker,
  workers,
} from '#functions/workers.ts';
import { HASH_SECRET_VARIABLE } from '#lib/accounts/key-hash.ts';
import { type IndexDeclaration, table as tableDeclaration } from '#lib/data/table.ts';
import {
  type GatewayAnswer,
  gatewayAnswers,
  METHOD_NOT_ALLOWED_BODY,
  REQUEST_ID_PLACEHOLDER,
} from './api-contract.ts';
import type { Stage, StageConfig } from './config.ts';
import { DeskpipeFunction } from './constructs/deskpipe-function.ts';
import { EmailOutbox } from './constructs/email-outbox.ts';
import { MailReceiving } from './constructs/mail-receiving.ts';
import { ScheduledRunner } from './constructs/scheduled-runner.ts';
import { ServiceAlarms } from './constructs/service-alarms.ts';
import { WebhookDispatcher } from './constructs/webhook-dispatcher.ts';
import {
  suppressAcceptedFindings,
  suppressOpenMethodNotAllowed,
  suppressPublicRoute,
} from './nag-suppressions.ts';

export interface DeskpipeStackProps extends StackProps {
  stage: Stage;
  config: StageConfig;
}

const ROOT = join(import.meta.dirname, '..');

const RETENTION: Record<StageConfig['logRetentionDays'], RetentionDays> = {
  7: RetentionDays.ONE_WEEK,
  30: RetentionDays.ONE_MONTH,
  90: RetentionDays.THREE_MONTHS,
  365: RetentionDays.ONE_YEAR,
};

/**
 * The whole service for one stage: the table, the authorizer, one function per route, the REST API, the webhook
 * dispatcher's functions, alarms.
 */
export class DeskpipeStack extends Stack {
  readonly table: TableV2;
  readonly api: RestApi;
  /** The service's alarms (ServiceAlarms), a nested stack. */
  readonly alarmStack: NestedStack;

  constructor(scope: Construct, id: string, props: DeskpipeStackProps) {
    super(scope, id, props);
    const { config, stage } = props;
    const namePrefix = `deskpipe-${stage}`;
    const retention = RETENTION[config.logRetentionDays];

    this.table = new TableV2(this, 'Table', {
      tableName: namePrefix,
      partitionKey: { name: tableDeclaration.partitionKey, type: AttributeType.STRING },
      sortKey: { name: tableDeclaration.sortKey, type: AttributeType.STRING },
      billing: Billing.onDemand(),
      timeToLiveAttribute: tableDeclaration.ttlAttribute,
      dynamoStream: StreamViewType[tableDeclaration.stream],
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: config.pointInTimeRecovery },
      deletionProtection: config.protectData,
      removalPolicy: config.protectData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      globalSecondaryIndexes: (Object.entries(tableDeclaration.indexes) as [string, IndexDeclaration][]).map(
        ([indexName, index]) => ({
          indexName,
          partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
          sortKey: { name: index.sortKey, type: AttributeType.STRING },
          projectionType: ProjectionType[index.projection],
        }),
      ),
    });

    const functionDefaults = {
      projectRoot: ROOT,
      namePrefix,
      memorySize: config.memorySize,
      logRetention: retention,
    };

    // The secret API keys are hashed under (lib/accounts/key-hash.ts): generated once per stage and kept across
    // deployments (a new one would invalidate every key). The functions that hash keys, request fingerprints or
    // erased addresses get it at deploy time.
    const keyHashSecret = new Secret(this, 'ApiKeyHashSecret', {
      secretName: `${namePrefix}-api-key-hash`,
      description: 'HMAC key of the stored API key hashes; changing it invalidates every API key.',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const keyHashEnvironment = (fn: DeskpipeFunction) =>
      fn.addEnvironment(HASH_SECRET_VARIABLE, keyHashSecret.secretValue.unsafeUnwrap());

    const authorizerFunction = new DeskpipeFunction(this, 'authorizer', {
      ...functionDefaults,
      entry: join(ROOT, authorizerEntry),
    }).bindTable(this.table, authorizerTableActions);
    keyHashEnvironment(authorizerFunction);
    const authorizer = new TokenAuthorizer(this, 'ApiKeyAuthorizer', {
      authorizerName: `${namePrefix}-api-key`,
      handler: authorizerFunction,
      identitySource: 'method.request.header.Authorization',
      resultsCacheTtl: Duration.seconds(config.authorizerCacheTtlSeconds),
    });

    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/${namePrefix}-access`,
      retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api = new RestApi(this, 'Api', {
      restApiName: namePrefix,
      cloudWatchRole: false,
      // Every type is binary: a handler's base64 answer (raw mail, an attachment; isBase64Encoded) goes out as its
      // bytes whatever the client's Accept says; JSON request bodies then reach the handlers base64, which they read.
      binaryMediaTypes: ['*/*'],
      deployOptions: {
        stageName: stage,
        throttlingRateLimit: config.throttling.rateLimit,
        throttlingBurstLimit: config.throttling.burstLimit,
        tracingEnabled: true,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
      },
    });

    // The gateway's own answers, shaped like the handlers' errors (infra/api-contract.ts).
    for (const [type, answer] of Object.entries(gatewayAnswers)) {
      this.api.addGatewayResponse(`Response${type}`, {
        type: ResponseType.of(type),
        statusCode: String(answer.statusCode),
        responseHeaders: {
          'Content-Type': "'application/json'",
          'X-Request-Id': 'context.requestId',
          ...Object.fromEntries(
            Object.entries((answer as GatewayAnswer).headers ?? {}).map(([name, value]) => [
              name,
              `'${value}'`,
            ]),
          ),
        },
        templates: { 'application/json': gatewayTemplate(answer.body) },
      });
    }

    const functions: Record<string, DeskpipeFunction> = { authorizer: authorizerFunction };
    for (const route of routes) {
      const fn = new DeskpipeFunction(this, route.name, {
        ...functionDefaults,
        entry: join(ROOT, route.entry),
        files: 'files' in route ? route.files : undefined,
      });
      if (route.tableActions.length > 0) fn.bindTable(this.table, route.tableActions);
      if ('indexQueries' in route && route.indexQueries) fn.bindIndexQueries(this.table, route.indexQueries);
      // Keys, Idempotency-Key fingerprints, addresses and the index's free-text keys are keyed hashes (routes.ts).
      if (holdsKeyHashSecret(route)) keyHashEnvironment(fn);
      functions[route.name] = fn;
      const method = this.api.root
        .resourceForPath(route.path)
        .addMethod(route.method, new LambdaIntegration(fn, { allowTestInvoke: false }), {
          ...(route.auth
            ? { authorizer, authorizationType: AuthorizationType.CUSTOM }
            : { authorizationType: AuthorizationType.NONE }),
        });
      if (!route.auth) suppressPublicRoute(method);
    }

    // A known path with a method it does not serve: 405 with Allow, before any authorizer, as locally.
    for (const path of paths) {
      const method = this.api.root
        .resourceForPath(path)
        .addMethod('ANY', methodNotAllowed(methodsOf(path).join(', ')), {
          authorizationType: AuthorizationType.NONE,
          methodResponses: [
            { statusCode: '405', responseParameters: { 'method.response.header.Allow': true } },
          ],
        });
      suppressOpenMethodNotAllowed(method);
    }

    const topic = config.alarmTopic
      ? new Topic(this, 'AlarmTopic', { topicName: `${namePrefix}-alarms`, enforceSSL: true })
      : undefined;
    if (topic && config.alarmTopic?.email)
      topic.addSubscription(new EmailSubscription(config.alarmTopic.email));

    // Receiving mail (docs/email.md): SES → the mail bucket → the inbound function; the download routes read it.
    const mail = new MailReceiving(this, 'Mail', {
      mail: config.mail,
      table: this.table,
      projectRoot: ROOT,
      namePrefix,
      memorySize: config.memorySize,
      logRetention: retention,
      reservedConcurrency: config.workerConcurrency.emailInbound,
      protectData: config.protectData,
      topic,
    });
    functions[emailInboundWorker.name] = mail.function;
    for (const route of routes) {
      const fn = functions[route.name];
      if (route.mailObjects && fn) mail.grantRead(fn, route.mailObjects);
    }

    // Webhooks: not API routes; the table's stream and a schedule invoke them.
    const webhooks = new WebhookDispatcher(this, 'Webhooks', {
      table: this.table,
      projectRoot: ROOT,
      namePrefix,
      memorySize: config.memorySize,
      logRetention: retention,
      concurrency: config.workerConcurrency,
      dueRunners: config.webhookDueRunners,
      topic,
    });
    functions[webhookStreamWorker.name] = webhooks.streamFunction;
    functions[webhookDueWorker.name] = webhooks.dueFunction;
    const runnerDefaults = {
      table: this.table,
      projectRoot: ROOT,
      namePrefix,
      memorySize: config.memorySize,
      logRetention: retention,
      topic,
    };
    // Service-level breaches on time: a schedule invokes it every minute for most of the minute (docs/sla.md).
    const breaches = new ScheduledRunner(this, 'SlaBreaches', {
      ...runnerDefaults,
      worker: slaBreachesWorker,
      description:
        'Runs the service-level breach runner (functions/sla-breaches.ts) for most of each minute.',
      slug: 'sla-breaches',
      everyMinutes: 1,
      ruleId: 'EveryMinute',
      notRunningAfter: Duration.minutes(5),
      notRunningMeans:
        'The service-level breach runner did not run for 5 minutes: breaches are late. See docs/deploy.md#sla-breaches-not-running.',
      reservedConcurrency: config.workerConcurrency.slaBreaches,
    });
    functions[slaBreachesWorker.name] = breaches.function;
    // Outbound mail: a schedule invokes the outbox runner, which sends through SES (docs/email.md, "Sending").
    const outbox = new EmailOutbox(this, 'EmailOutbox', {
      ...runnerDefaults,
      reservedConcurrency: config.workerConcurrency.emailOutbox,
      // Bounces and complaints come back to the function that handles what SES hands back (mail received).
      feedbackTo: mail.function,
    });
    functions[emailOutboxWorker.name] = outbox.function;
    // The trash's purge (decisions.md, "Deleting, restoring and erasing"): every few minutes, until nothing is due.
    const purge = new ScheduledRunner(this, 'TrashPurge', {
      ...runnerDefaults,
      worker: purgeWorker,
      description:
        'Purges what is past its purge time in the trash (functions/trash-purge.ts), until nothing is due.',
      slug: 'trash-purge',
      everyMinutes: PURGE_EVERY_MINUTES,
      notRunningAfter: Duration.hours(1),
      notRunningMeans:
        'The trash purge did not run for an hour: objects stay past their purge time. See docs/deploy.md#trash-purge-not-running.',
      reservedConcurrency: config.workerConcurrency.trashPurge,
    });
    // A purged ticket's mail goes from the mail bucket with it (each account's own copies).
    mail.grantPurge(purge.function);
    functions[purgeWorker.name] = purge.function;
    // Erasures (decisions.md, "Erasing a person"): every minute, until no running erasure has steps to go.
    const erasures = new ScheduledRunner(this, 'Erasures', {
      ...runnerDefaults,
      worker: erasureWorker,
      description:
        'Runs the erasures of people (functions/erasures.ts), a bounded step at a time, each minute.',
      slug: 'erasures',
      everyMinutes: 1,
      notRunningAfter: Duration.minutes(15),
      notRunningMeans:
        'The erasure runner did not run for 15 minutes: erasures stay running. See docs/deploy.md#erasures-not-running.',
      reservedConcurrency: config.workerConcurrency.erasures,
    });
    mail.grantErase(erasures.function);
    functions[erasureWorker.name] = erasures.function;
    // The workers that name addresses or index keys by keyed hashes (functions/workers.ts, keyHashSecret).
    for (const worker of workers) {
      const fn = functions[worker.name];
      if (worker.keyHashSecret && fn) keyHashEnvironment(fn);
    }
    // The per-function alarms (two a function) in a nested stack of their own: the stack's resources stay under
    // CloudFormation's 500 a stack as functions are added (docs/deploy.md, "What is deployed").
    this.alarmStack = new NestedStack(this, 'ServiceAlarms', {
      description: `deskpipe ${stage}: the service's alarms (API, functions, table)`,
    });
    new ServiceAlarms(this.alarmStack, 'Alarms', {
      api: this.api,
      functions,
      table: this.table,
      thresholds: config.alarms,
      topic,
      namePrefix,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.api.url });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'MailBucketName', { value: mail.bucket.bucketName });
    new CfnOutput(this, 'MailReceiptRuleSet', { value: mail.ruleSet.receiptRuleSetName });
    if (topic) new CfnOutput(this, 'AlarmTopicArn', { value: topic.topicArn });

    suppressAcceptedFindings(this);
  }
}

/** A mapping template that renders a body, with $context.requestId filled in by API Gateway. */
function gatewayTemplate(body: Record<string, string>): string {
  return JSON.stringify(body).replace(JSON.stringify(REQUEST_ID_PLACEHOLDER), '"$context.requestId"');
}

function methodNotAllowed(allow: string): MockIntegration {
  return new MockIntegration({
    // NEVER would answer 415 to a body of another content type; the only (default) integration response
    // answers 405 whatever the mock returns, so any request body may pass.
    passthroughBehavior: PassthroughBehavior.WHEN_NO_MATCH,
    requestTemplates: { 'application/json': '{"statusCode": 405}' },
    integrationResponses: [
      {
        statusCode: '405',
        responseParameters: { 'method.response.header.Allow': `'${allow}'` },
        responseTemplates: {
          'application/json': `#set($context.responseOverride.header.X-Request-Id = $context.requestId)\n${JSON.stringify(METHOD_NOT_ALLOWED_BODY)}`,
        },
      },
    ],
  });
}
