import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { allows, decodeGrants, isScope, lacksScopeMessage, type Scope } from '#lib/accounts/scopes.ts';
import { Forbidden } from '#lib/errors.ts';
import type { Event, Internal, Result } from './context.ts';
import { callerOf, queryOf } from './request.ts';

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
  readonly scopeByType?: 'query' | 'object';
}): MiddlewareObj<Event, Result, Error, Context, Internal> {
  const { scope } = route;
  if (scope === undefined || !isScope(scope)) {
    throw new Error(
      `route ${route.name}: a handler behind the authorizer needs a scope in functions/routes.ts`,
    );
  }
  if (route.scopeByType) return typedScope(route.scopeByType);
  return {
    before: (request) => {
      // No caller at all (a request that did not pass the authorizer) is a 401, as the handler would answer.
      const grants = decodeGrants(callerOf(request.event).scopes);
      if (!allows(grants, scope)) throw new Forbidden(lacksScopeMessage(scope));
    },
  };
}

/** The types whose scopes decide the trash's routes, in the order a 403 names them. */
export const TYPED_SCOPE_TYPES = ['ticket', 'deal', 'contact'] as const;

const typedScopeOf = (type: string, access: 'read' | 'write') => `${type}s:${access}` as Scope;

/**
 * The trash's scope (decisions.md, "API keys: scopes"): the list needs `<type>:read` of each type it shows (the
 * `type` query parameter's, or all three without it; an unknown type needs one of them, then is a 422); a restore
 * needs one `<type>:write` of the three here, and its object's type's once the trash item is read
 * (requireTypeScope).
 */
function typedScope(by: 'query' | 'object'): MiddlewareObj<Event, Result, Error, Context, Internal> {
  return {
    before: (request) => {
      const grants = decodeGrants(callerOf(request.event).scopes);
      const access = by === 'query' ? 'read' : 'write';
      const all = TYPED_SCOPE_TYPES.map((t) => typedScopeOf(t, access));
      const named = by === 'query' ? queryOf(request.event).type : undefined;
      const type = named?.length === 1 ? named[0] : undefined;
      const needed =
        by === 'query' && named === undefined
          ? all
          : type !== undefined && (TYPED_SCOPE_TYPES as readonly string[]).includes(type)
            ? [typedScopeOf(type, access)]
            : undefined;
      if (needed) {
        const lacking = needed.find((s) => !allows(grants, s));
        if (lacking) throw new Forbidden(lacksScopeMessage(lacking));
      } else if (!all.some((s) => allows(grants, s))) {
        throw new Forbidden(lacksScopeMessage(all[0] as Scope));
      }
    },
  };
}

/** A restore's own check, once its object's type is known: the key holds `<type>:write` (403 otherwise). */
export function requireTypeScope(encodedGrants: unknown, type: string, access: 'read' | 'write'): void {
  const scope = typedScopeOf(type, access);
  if (!allows(decodeGrants(encodedGrants), scope)) throw new Forbidden(lacksScopeMessage(scope));
}
