import { describe, expect, it } from 'vitest';
import { PUBLIC, routes } from '#functions/routes.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { type Grant, SCOPES, type Scope } from '#lib/accounts/scopes.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Every route of the route table, called with a key lacking its scope: 403 with the documented body, and not one
 * store call (nothing read, nothing written, no rate count). It walks the table, so a route added later is
 * covered by this test as soon as it is declared (with its scope: the table takes no route without one).
 */

/** Every scope but those that would allow `scope` (a `:write` includes its `:read`). */
function allBut(scope: Scope): Grant[] {
  const write = scope.replace(/:read$/, ':write');
  return SCOPES.filter((s) => s !== scope && s !== write);
}

/** A request that would pass everything else the route checks as far as possible: its path filled, a JSON body. */
function requestOf(route: (typeof routes)[number]) {
  const filled = route.path.replace(/\{(\w+)\}/g, (_, name: string) => `unknown-${name}`);
  // The trash list's scope follows its `type` (the ticket's, the route's declared scope, for type=ticket).
  const path = 'scopeByType' in route && route.scopeByType === 'query' ? `${filled}?type=ticket` : filled;
  const write = route.method !== 'GET';
  return {
    path,
    options: write ? { body: {}, headers: { 'Idempotency-Key': `scope-walk-${route.name}` } } : {},
  };
}

describe('scopes, walking the route table', () => {
  const account = useTestAccount();
  // Cached like the deployed gateway (30 s): the measured call runs no authorizer, only the route's stack.
  const gateway = useGateway(30);
  const keys = new Map<Scope, string>();
  const keyLacking = async (scope: Scope) => {
    let key = keys.get(scope);
    if (!key) {
      key = (await createKey(account.accountId, { name: `lacks ${scope}`, scopes: allBut(scope) })).api_key;
      keys.set(scope, key);
    }
    return key;
  };

  const guarded = routes.filter((r) => r.scope !== PUBLIC);

  it('covers every route but the public contract', () => {
    expect(guarded.length).toBe(routes.length - 3);
  });

  // A restore's scope is its object's type's, known once the trash item is read: test/api/trash.test.ts has it.
  const checkedFirst = guarded.filter((r) => !('scopeByType' in r && r.scopeByType === 'object'));
  it.each(checkedFirst.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s with a key lacking its scope: 403 naming the scope, no store call',
    async (_label, route) => {
      const scope = route.scope as Scope;
      const key = await keyLacking(scope);
      const { path, options } = requestOf(route);
      // The first call runs the authorizer (and fills the gateway's cache), the second only the route's stack.
      const warm = await gateway.call(route.method, path, { key, ...options });
      expect(warm.status).toBe(403);
      const { result, operations } = await withFault(undefined, () =>
        gateway.call(route.method, path, { key, ...options }),
      );
      expect(result.status).toBe(403);
      expect(result.body).toEqual({ message: `This key lacks the scope ${scope}.` });
      expect(operations).toEqual([]);
    },
  );

  it('the same requests with a key holding only the scope get past the check', async () => {
    for (const route of guarded) {
      const scope = route.scope as Scope;
      const only = (await createKey(account.accountId, { name: `only ${scope}`, scopes: [scope] })).api_key;
      const { path, options } = requestOf(route);
      const response = await gateway.call(route.method, path, { key: only, ...options });
      expect([403, 401], `${route.method} ${route.path}: ${response.text}`).not.toContain(response.status);
    }
  });
});
