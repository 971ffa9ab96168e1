import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { authorizerEntry, PUBLIC, type RouteName, route, routes } from '#functions/routes.ts';
import { ROOT } from '#infra/local/environment.ts';
import { isScope } from '#lib/accounts/scopes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { lambdaContext, proxyEvent } from '#test/support/events.ts';

describe('route table', () => {
  it('names a scope for every route; only the contract and its page are public', () => {
    for (const r of routes) expect(isScope(r.scope) || r.scope === PUBLIC, r.name).toBe(true);
    expect(routes.filter((r) => r.scope === PUBLIC).map((r) => r.name)).toEqual([
      'getOpenApi',
      'docsPage',
      'docsAsset',
    ]);
  });

  it('a handler behind the authorizer cannot be built for a route without a scope (deny by default)', () => {
    const handle = async () => ({ statusCode: 200, body: {} });
    expect(() => httpHandler({ route: { name: 'unscoped' } }, handle)).toThrow(/needs a scope/);
    expect(() => httpHandler({ route: { name: 'public', scope: PUBLIC } }, handle)).toThrow(/needs a scope/);
    expect(() => httpHandler({ route: { name: 'typo', scope: 'tickets:reed' } }, handle)).toThrow(
      /needs a scope/,
    );
  });

  it.each([...routes.map((r) => r.entry), authorizerEntry])(
    '%s exports a handler function',
    async (entry) => {
      const module = await import(pathToFileURL(join(ROOT, entry)).href);
      expect(typeof module.handler).toBe('function');
    },
  );

  it.each(routes.map((r) => [r.entry, r] as const))(
    '%s logs the name of the route whose entry it is',
    async (_entry, served) => {
      // The logger reads LOG_LEVEL when it loads: a fresh, unwrapped copy of the entry with logs on.
      vi.resetModules();
      vi.stubEnv('LOG_LEVEL', 'info');
      const lines: string[] = [];
      const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        return true;
      });
      try {
        const { handler } = await vi.importActual<{ handler: (...args: unknown[]) => Promise<unknown> }>(
          pathToFileURL(join(ROOT, served.entry)).href,
        );
        // No caller and no body: refused (401 or 415) before any DynamoDB call.
        await handler(proxyEvent({ method: served.method, path: served.path }), lambdaContext);
      } finally {
        spy.mockRestore();
        vi.unstubAllEnvs();
      }
      expect(lines.map((line) => JSON.parse(line).route)).toEqual([served.name]);
    },
  );

  it('refuses a route name that is not in the table, when the handler module loads', () => {
    expect(() => route('ghost' as RouteName)).toThrow('functions/routes.ts has no route named "ghost"');
  });

  it('names each route once and each method/path pair once', () => {
    expect(new Set(routes.map((r) => r.name)).size).toBe(routes.length);
    expect(new Set(routes.map((r) => `${r.method} ${r.path}`)).size).toBe(routes.length);
  });
});
