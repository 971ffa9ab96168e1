import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent, Context } from 'aws-lambda';
import { keyPrefixOf, resolveApiKey } from '#lib/accounts/api-keys.ts';
import { edgeKeyValue } from '#lib/accounts/edge-limits.ts';
import { Forbidden, Unauthenticated } from '#lib/errors.ts';
import { inInvocationScope, logAuthorizerDecision, logError } from '#lib/log.ts';

/**
 * API Gateway TOKEN authorizer: `Authorization: Bearer <key>` → the calling account.
 * No HTTP error middleware here: an authorizer answers in API Gateway's own terms. Throwing
 * "Unauthorized" makes the gateway answer 401 (UNAUTHORIZED response); a Deny policy makes it answer 403
 * (ACCESS_DENIED). Both bodies are set as gateway responses in the stack, and the local gateway mirrors them.
 * The policy covers every route of the API because API Gateway caches it per token, not per route.
 */
export const UNAUTHORIZED = 'Unauthorized';

export function handler(
  event: APIGatewayTokenAuthorizerEvent,
  context?: Context,
): Promise<APIGatewayAuthorizerResult> {
  // A TOKEN event carries no API Gateway request id: the Lambda's own is the one to search for.
  return inInvocationScope({ requestId: context?.awsRequestId ?? 'unknown' }, context, () =>
    authorize(event),
  );
}

async function authorize(event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const everyRoute = wildcardArn(event.methodArn);
  try {
    const caller = await resolveApiKey(event.authorizationToken);
    logAuthorizerDecision({ decision: 'allow', keyId: caller.keyId, accountId: caller.accountId });
    return {
      principalId: caller.keyId,
      policyDocument: policy('Allow', everyRoute),
      // The account's API Gateway API key: the edge throttles each account at its usage plan's rate
      // (lib/accounts/edge-limits.ts; the REST API's apiKeySource is AUTHORIZER).
      usageIdentifierKey: edgeKeyValue(caller.accountId),
      context: {
        accountId: caller.accountId,
        plan: caller.plan,
        keyId: caller.keyId,
        rateLimit: caller.rateLimit,
        // What the key may do: checked per route by the handler stack (lib/http/scope.ts), as the policy is
        // cached per token for every route.
        scopes: caller.scopes,
      },
    };
  } catch (error) {
    const keyPrefix = keyPrefixOf(event.authorizationToken);
    if (error instanceof Unauthenticated) {
      logAuthorizerDecision({ decision: 'unauthenticated', keyPrefix });
      throw new Error(UNAUTHORIZED);
    }
    if (error instanceof Forbidden) {
      logAuthorizerDecision({ decision: 'deny', keyPrefix });
      return { principalId: 'forbidden', policyDocument: policy('Deny', everyRoute) };
    }
    // The gateway answers 503 (AUTHORIZER_FAILURE); the reason is only here, in the log.
    logError(error);
    throw error;
  }
}

/** arn:aws:execute-api:region:account:api/stage/METHOD/path → arn:…:api/stage/*\/* */
function wildcardArn(methodArn: string): string {
  const [apiArn, stage] = methodArn.split('/');
  return `${apiArn}/${stage}/*/*`;
}

function policy(effect: 'Allow' | 'Deny', resource: string): APIGatewayAuthorizerResult['policyDocument'] {
  return {
    Version: '2012-10-17',
    Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: resource }],
  };
}
