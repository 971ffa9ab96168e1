import { join } from 'node:path';
import { Duration, NestedStack, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  ApiKeySourceType,
  AuthorizationType,
  LambdaIntegration,
  LogGroupLogDestination,
  MockIntegration,
  PassthroughBehavior,
  ResponseType,
  RestApi,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { authorizerEntry, authorizerTableActions, methodsOf, paths, routes } from '#functions/routes.ts';
import { EDGE_PLANS, PLAN_EDGE_LIMITS } from '#lib/accounts/edge-limits.ts';
import {
  type GatewayAnswer,
  gatewayAnswers,
  METHOD_NOT_ALLOWED_BODY,
  REQUEST_ID_PLACEHOLDER,
} from '../api-contract.ts';
import { DeskpipeFunction } from '../constructs/deskpipe-function.ts';
import { suppressOpenMethodNotAllowed, suppressPublicRoute } from '../nag-suppressions.ts';
import type { StageParts } from './stage-parts.ts';

export interface ApiStackProps extends StageParts {
  /** Each route's function (RouteStack), by the route's name. */
  routeFunctions: Readonly<Record<string, DeskpipeFunction>>;
}

/**
 * The REST API (a nested stack of the stage): the authorizer and its function, one method per route of the route
 * table invoking that route's function (RouteStack), the 405 mock methods, the gateway's own answers, the stage with
 * its access logs and throttling, and the usage plans that throttle each account. The methods, their resources and their deployment stay in one stack, so a changed
 * route redeploys the API; each method's invoke permission is a resource of this stack (LambdaIntegration scopes it
 * to the method), so the functions' stack never reads the API.
 */
export class ApiStack extends NestedStack {
  readonly api: RestApi;
  /** The authorizer's function, by its name. */
  readonly functions: Readonly<Record<string, DeskpipeFunction>>;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, {
      description: `deskpipe ${props.stage}: the REST API, its authorizer and a method per route`,
    });
    const { config, namePrefix, stage } = props;
    const authorizerFunction = new DeskpipeFunction(this, 'authorizer', {
      ...props.functionDefaults,
      entry: join(props.functionDefaults.projectRoot, authorizerEntry),
    }).bindTable(props.table, authorizerTableActions);
    this.functions = { authorizer: authorizerFunction };
    const authorizer = new TokenAuthorizer(this, 'ApiKeyAuthorizer', {
      authorizerName: `${namePrefix}-api-key`,
      handler: authorizerFunction,
      identitySource: 'method.request.header.Authorization',
      resultsCacheTtl: Duration.seconds(config.authorizerCacheTtlSeconds),
    });

    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/${namePrefix}-access`,
      retention: props.functionDefaults.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api = new RestApi(this, 'Api', {
      restApiName: namePrefix,
      cloudWatchRole: false,
      // Every type is binary: a handler's base64 answer (raw mail, an attachment; isBase64Encoded) goes out as its
      // bytes whatever the client's Accept says; JSON request bodies then reach the handlers base64, which they read.
      binaryMediaTypes: ['*/*'],
      // The account's API Gateway API key comes from the authorizer (usageIdentifierKey), never from the client.
      apiKeySourceType: ApiKeySourceType.AUTHORIZER,
      deployOptions: {
        stageName: stage,
        throttlingRateLimit: config.throttling.rateLimit,
        throttlingBurstLimit: config.throttling.burstLimit,
        tracingEnabled: true,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
      },
    });
    this.addGatewayAnswers();
    this.addUsagePlans(namePrefix);

    for (const route of routes) {
      const fn = props.routeFunctions[route.name];
      if (!fn) throw new Error(`no function for the route ${route.name}`);
      const method = this.api.root
        .resourceForPath(route.path)
        .addMethod(route.method, new LambdaIntegration(fn, { allowTestInvoke: false }), {
          ...(route.auth
            ? {
                authorizer,
                authorizationType: AuthorizationType.CUSTOM,
                apiKeyRequired: config.edgeKeysRequired,
              }
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
  }

  /**
   * A usage plan per plan that reaches the API, at its edge figures (lib/accounts/edge-limits.ts), on this stage:
   * API Gateway throttles each API key in it on its own, so each account (its key, which the admin path puts in its
   * plan's usage plan: infra/admin/edge-keys.ts) gets the plan's rate and burst, past which it is answered THROTTLED.
   */
  private addUsagePlans(namePrefix: string): void {
    for (const plan of EDGE_PLANS) {
      this.api.addUsagePlan(`UsagePlan-${plan}`, {
        name: `${namePrefix}-${plan}`,
        description: `Each ${plan} account's API key, throttled on its own at the plan's figures`,
        throttle: PLAN_EDGE_LIMITS[plan],
        apiStages: [{ api: this.api, stage: this.api.deploymentStage }],
      });
    }
  }

  /** The gateway's own answers, shaped like the handlers' errors (infra/api-contract.ts). */
  private addGatewayAnswers(): void {
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
