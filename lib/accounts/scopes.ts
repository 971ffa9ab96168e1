/**
 * The scopes an API key can hold (decisions.md, "API keys: scopes, expiry, rotation"): the one list. The route
 * table names each route's scope from it (functions/routes.ts), the handler stack checks it (lib/http/scope.ts),
 * the OpenAPI document names it in each operation's security requirement, and key writes validate against it.
 */
export const SCOPES = [
  'tickets:read',
  'tickets:write',
  'deals:read',
  'deals:write',
  'contacts:read',
  'contacts:write',
  'events:read',
  'webhooks:manage',
  'email:read',
  'erasures:write',
  'keys:manage',
  'agents:read',
  'agents:write',
  'organizations:read',
  'organizations:write',
  'imports:read',
  'imports:write',
  'rules:read',
  'rules:write',
] as const;

export type Scope = (typeof SCOPES)[number];

/** Every scope: what keys made before scopes have, and what `keys create` gives without `--scopes`. */
export const EVERY_SCOPE = '*';

/** What a key holds: scopes, or `*`. */
export type Grant = Scope | typeof EVERY_SCOPE;

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);
export const isGrant = (value: string): value is Grant => value === EVERY_SCOPE || isScope(value);

/** A `:write` scope includes its `:read`. */
function includedBy(scope: Scope): readonly Grant[] {
  const write = scope.endsWith(':read') ? scope.replace(/:read$/, ':write') : undefined;
  return write && isScope(write) ? [EVERY_SCOPE, scope, write] : [EVERY_SCOPE, scope];
}

/** Whether grants that a key holds allow `scope`; deny by default (an empty or unknown grant allows nothing). */
export function allows(grants: readonly string[], scope: Scope): boolean {
  return includedBy(scope).some((g) => grants.includes(g));
}

/** The grants a key asks for that `holder` does not have itself (no escalation): empty when it may mint them. */
export function beyond(holder: readonly string[], requested: readonly Grant[]): Grant[] {
  return requested.filter((g) => (g === EVERY_SCOPE ? !holder.includes(EVERY_SCOPE) : !allows(holder, g)));
}

/** How grants travel in the authorizer's context (its values are strings): space-separated. */
export const encodeGrants = (grants: readonly Grant[]): string => grants.join(' ');
export const decodeGrants = (encoded: unknown): string[] =>
  typeof encoded === 'string' ? encoded.split(' ').filter(isGrant) : [];

export const lacksScopeMessage = (scope: Grant) => `This key lacks the scope ${scope}.`;
