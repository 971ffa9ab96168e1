import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { allows, decodeGrants, isScope, lacksScopeMessage } from '#lib/accounts/scopes.ts';
import { Forbidden } from '#lib/errors.ts';
import type { Event, Internal, Result } from './context.ts';
import { callerOf } from './request.ts';

/**
 * The one scope check (decisions.md, "API keys: scopes, expiry, rotation"): the route's scope, from the route
 * table, against the grants the authorizer put in the request's context. Deny by default: a route declared
 * without a scope (or public, which never reaches this stack) and a caller without grants are refused. It runs
 * first, before the rate count and any parsing, so a key lacking the scope is a 403 that reads and writes
 * nothing, whatever else is wrong with the request.
 */
export function requireScope(route: {
  readonly name: string;
  readonly scope?: string;
}): MiddlewareObj<Event, Result, Error, Context, Internal> {
  const { scope } = route;
  if (scope === undefined || !isScope(scope)) {
    throw new Error(
      `route ${route.name}: a handler behind the authorizer needs a scope in functions/routes.ts`,
    );
  }
  return {
    before: (request) => {
      // No caller at all (a request that did not pass the authorizer) is a 401, as the handler would answer.
      const grants = decodeGrants(callerOf(request.event).scopes);
      if (!allows(grants, scope)) throw new Forbidden(lacksScopeMessage(scope));
    },
  };
}
