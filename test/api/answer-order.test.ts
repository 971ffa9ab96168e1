import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PUBLIC, routes } from '#functions/routes.ts';
import { agentsFile, createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The order of answers (decisions.md, "Errors"): the key (401), its plan and scope (403), then the object the path
 * names (404, also another account's), then the body (400, 422), then the state (409, 412). A request naming an
 * object the caller does not have is a 404 whatever else is wrong with it, and writes nothing.
 */
const gateway = useGateway();

describe('a message posted to a ticket the caller does not have', () => {
  const caller = useTestAccount({ agents: agentsFile(1) });

  it('is a 404 by uuid and by reference, another account’s or unknown, valid body or not, and writes nothing', async () => {
    const other = await createTestAccount({ agents: agentsFile(1) });
    const created = await gateway.call('POST', '/api/tickets', {
      key: other.apiKey,
      body: { subject: 'Theirs', description: 'd', requester_email: 'r@other.test' },
    });
    expect(created.status, created.text).toBe(201);
    const theirs = created.body.ticket as { uuid: string; reference: string };
    const state = async () => {
      const ticket = await gateway.call('GET', `/api/tickets/${theirs.uuid}`, { key: other.apiKey });
      const messages = await gateway.call('GET', `/api/tickets/${theirs.uuid}/messages`, {
        key: other.apiKey,
      });
      const own = await gateway.call('GET', '/api/tickets', { key: caller.apiKey });
      return [ticket.headers.get('etag'), messages.body.data, own.body.total];
    };
    const before = await state();
    const agent = (caller.agents[0] as { id: number }).id;
    const refs = [theirs.uuid, theirs.reference, randomUUID(), `${theirs.reference.split('-')[0]}-999999`];
    const bodies = [
      { body: 'Hello.', agent_id: agent },
      // An agent the caller does not have: a 422 on a ticket of its own.
      { body: 'Hello.', agent_id: 999_999 },
      {},
      { body: 'x', author: 'requester', visibility: 'internal' },
      '{"body": ',
    ];
    for (const ref of refs) {
      for (const body of bodies) {
        const answer = await gateway.call('POST', `/api/tickets/${ref}/messages`, {
          key: caller.apiKey,
          body,
        });
        expect(answer.status, `${ref} ${JSON.stringify(body)}: ${answer.text}`).toBe(404);
        expect(answer.body).toEqual({ message: 'Not found.' });
      }
    }
    expect(await state()).toEqual(before);
  });
});

describe('every route with a path object, walking the route table', () => {
  const account = useTestAccount();
  const withPath = routes.filter((r) => r.scope !== PUBLIC && r.path.includes('{'));

  it('covers the routes that name an object', () => {
    expect(withPath.length).toBeGreaterThanOrEqual(20);
  });

  /**
   * What is wrong with a request besides its object, for each route: a body that is not JSON, one that fails
   * validation, a query that does, an Idempotency-Key or an If-Match header that does.
   */
  type Fault = { what: string; query: string; options: { body?: unknown; headers?: Record<string, string> } };
  const faults = (write: boolean, body: boolean): Fault[] => [
    { what: 'query', query: '?limit=0&per_page=0&after=%00&visibility=none&since=soon', options: {} },
    ...(body
      ? [
          { what: 'body not JSON', query: '', options: { body: '{"x": ' } },
          { what: 'body an array', query: '', options: { body: [] } },
          { what: 'body invalid', query: '', options: { body: { agent_id: 'x', priority: 'none', url: 1 } } },
          { what: 'body empty', query: '', options: { body: {} } },
        ]
      : []),
    ...(write
      ? [
          {
            what: 'Idempotency-Key',
            query: '',
            options: { headers: { 'Idempotency-Key': 'x'.repeat(300) } },
          },
          { what: 'If-Match', query: '', options: { headers: { 'If-Match': `"${'1'.repeat(2_000)}"` } } },
        ]
      : []),
  ];

  it.each(withPath.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s naming nothing of the account: 404 whatever else is wrong',
    async (_label, route) => {
      const write = route.method !== 'GET';
      const body = write && route.method !== 'DELETE';
      for (const id of ['unknown', randomUUID()]) {
        const path = route.path.replace(/\{(\w+)\}/g, () => id);
        for (const fault of faults(write, body)) {
          const options = {
            ...fault.options,
            ...(body && !('body' in fault.options) ? { body: {} } : {}),
          };
          const answer = await gateway.call(route.method, `${path}${fault.query}`, {
            key: account.apiKey,
            ...options,
          });
          expect(answer.status, `${fault.what} ${id}: ${answer.text}`).toBe(404);
        }
      }
    },
  );
});
