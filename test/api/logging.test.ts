import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, tokenEvent } from '#test/support/events.ts';
import { capturedOutput as output } from '#test/support/output.ts';

/**
 * What the service writes on stdout and stderr: the logger's lines and the EMF counts. The logger reads
 * LOG_LEVEL and the counts their switches when their modules load, so each test loads the code afresh
 * under the environment it describes.
 */
// The api tier's files share a module graph in a worker: the next file loads the code afresh, not this file's last.
afterAll(() => vi.resetModules());

async function load(env: Record<string, string | undefined>) {
  vi.resetModules();
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  // The entries unwrapped (test/support/table-actions-setup.ts wraps them once per file, and a wrapped module
  // would keep the logger of its first load, whatever LOG_LEVEL says now).
  type Entry = { handler: (...args: never[]) => Promise<never> };
  const [{ httpHandler }, authorizer, createTicket, createDeal] = await Promise.all([
    import('#lib/http/handler.ts'),
    vi.importActual<typeof import('#functions/authorizer.ts')>('#functions/authorizer.ts'),
    vi.importActual<Entry & typeof import('#functions/tickets-create.ts')>('#functions/tickets-create.ts'),
    vi.importActual<Entry & typeof import('#functions/deals-create.ts')>('#functions/deals-create.ts'),
  ]);
  return {
    httpHandler,
    authorizer: authorizer.handler,
    createTicket: createTicket.handler,
    createDeal: createDeal.handler,
  };
}

const caller = {
  accountId: 'acc-log',
  plan: 'pro' as const,
  keyId: 'key_log',
  rateLimit: 1_000_000,
  scopes: '*',
};
const API_KEY = 'dpk_supersecretvalue0123456789abcdefghijklmnopq';
const body = { subject: 'Secret subject', requester_email: 'private@person.test' };
const PRIVATE = /supersecret|private@person|Secret subject/;

const post = (headers: Record<string, string> = {}) =>
  proxyEvent({
    method: 'POST',
    path: '/api/echo',
    caller,
    body,
    headers: { Authorization: `Bearer ${API_KEY}`, 'X-Request-Id': 'req-log-1', ...headers },
  });

describe('request logs', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('puts the request id, account id, route and level on every line, never the key, body or an e-mail', async () => {
    const { httpHandler } = await load({ LOG_LEVEL: 'debug' });
    const ok = httpHandler(
      { route: { name: 'echo', scope: 'tickets:read' }, body: true },
      async (request) => ({
        statusCode: 201,
        body: request.body,
      }),
    );
    // An SDK error can carry the item a condition failed on: none of it may reach the log.
    const broken = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async () => {
      throw Object.assign(new Error('condition failed'), { Item: body, name: 'ConditionalCheckFailed' });
    });
    const { text, lines } = await output(async () => {
      await ok(post(), lambdaContext);
      await broken(post(), lambdaContext);
    });

    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toMatchObject({
        requestId: 'req-log-1',
        accountId: 'acc-log',
        route: 'echo',
        service: 'deskpipe',
      });
      expect(['INFO', 'ERROR']).toContain(line.level);
    }
    expect(lines[0]).toMatchObject({ level: 'INFO', message: 'request', method: 'POST', status: 201 });
    expect(lines[0]?.durationMs).toEqual(expect.any(Number));
    expect(lines[1]).toMatchObject({
      level: 'ERROR',
      message: 'unexpected error',
      error: { name: 'ConditionalCheckFailed', message: 'condition failed', stack: expect.any(String) },
    });
    expect(lines[2]).toMatchObject({ level: 'ERROR', message: 'request', status: 500 });
    expect(text).not.toMatch(PRIVATE);
  });

  it("does not carry one request's keys into the next", async () => {
    const { httpHandler } = await load({ LOG_LEVEL: 'info' });
    const ok = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async () => ({
      statusCode: 201,
      body: {},
    }));
    const anonymous = proxyEvent({
      method: 'POST',
      path: '/api/echo',
      body,
      headers: { 'X-Request-Id': 'req-log-2' },
    });
    const { lines } = await output(async () => {
      await ok(post(), lambdaContext);
      await ok(anonymous, lambdaContext);
    });
    expect(lines.map((line) => [line.requestId, line.accountId, line.status])).toEqual([
      ['req-log-1', 'acc-log', 201],
      ['req-log-2', undefined, 401],
    ]);
  });

  it("carries Lambda's fields: the function's request id, and a cold start on the first invocation only", async () => {
    const { httpHandler } = await load({ LOG_LEVEL: 'info', AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand' });
    const ok = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async () => ({
      statusCode: 201,
      body: {},
    }));
    const { lines } = await output(async () => {
      await ok(post(), { ...lambdaContext, awsRequestId: 'lambda-1', functionName: 'echo-fn' });
      await ok(post(), { ...lambdaContext, awsRequestId: 'lambda-2', functionName: 'echo-fn' });
    });
    expect(lines.map((line) => [line.function_request_id, line.function_name, line.cold_start])).toEqual([
      ['lambda-1', 'echo-fn', true],
      ['lambda-2', 'echo-fn', false],
    ]);
  });

  it.each([
    ['DEBUG', ['DEBUG', 'INFO', 'ERROR', 'ERROR']],
    ['info', ['INFO', 'ERROR', 'ERROR']],
    ['Warn', ['ERROR', 'ERROR']],
    ['error', ['ERROR', 'ERROR']],
    ['silent', []],
    ['SILENT', []],
  ])('LOG_LEVEL=%s keeps the lines of that level and above', async (level, expected) => {
    const { httpHandler, authorizer } = await load({ LOG_LEVEL: level });
    const ok = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async () => ({
      statusCode: 201,
      body: {},
    }));
    const broken = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async () => {
      throw new Error('boom');
    });
    const { lines } = await output(async () => {
      await authorizer(tokenEvent('Basic dXNlcjpwYXNz')).catch(() => undefined); // a debug decision
      await ok(post(), lambdaContext); // an info line
      await broken(post(), lambdaContext); // two error lines
    });
    expect(lines.map((line) => line.level)).toEqual(expected);
  });
});

describe('authorizer logs', () => {
  afterEach(() => vi.unstubAllEnvs());

  const context = { ...lambdaContext, awsRequestId: 'lambda-req-1' };

  it('logs each decision at debug level with the key id or its shown prefix, never the key', async () => {
    const { authorizer } = await load({ LOG_LEVEL: 'DEBUG' });
    const pro = await createTestAccount();
    const startup = await createTestAccount({ plan: 'startup' });
    const unknownKey = 'dpk_neverIssuedToAnyoneAtAll0000000000000000000';
    const { text, lines } = await output(async () => {
      await authorizer(tokenEvent(`Bearer ${pro.apiKey}`), context);
      await authorizer(tokenEvent(`Bearer ${startup.apiKey}`), context);
      await authorizer(tokenEvent(`Bearer ${unknownKey}`), context).catch(() => undefined);
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'DEBUG',
        requestId: 'lambda-req-1',
        decision: 'allow',
        keyId: expect.stringMatching(/^key_/),
        accountId: pro.accountId,
      }),
      expect.objectContaining({ level: 'DEBUG', decision: 'deny', keyPrefix: startup.apiKey.slice(0, 12) }),
      expect.objectContaining({ level: 'DEBUG', decision: 'unauthenticated', keyPrefix: 'dpk_neverIss' }),
    ]);
    for (const secret of [pro.apiKey, startup.apiKey, unknownKey])
      expect(text).not.toContain(secret.slice(12));
  });

  it('logs an unexpected failure at error level and still fails', async () => {
    // A store that refuses connections: the key lookup fails with neither 401 nor 403.
    const { authorizer } = await load({
      LOG_LEVEL: 'error',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
      DYNAMODB_MAX_ATTEMPTS: '1',
    });
    let failure: unknown;
    const { text, lines } = await output(async () => {
      failure = await authorizer(tokenEvent(`Bearer ${API_KEY}`), context).catch((error: unknown) => error);
    });
    expect(failure).toBeInstanceOf(Error);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'ERROR',
        message: 'unexpected error',
        requestId: 'lambda-req-1',
        error: expect.objectContaining({ stack: expect.any(String) }),
      }),
    ]);
    expect(text).not.toMatch(PRIVATE);
  });
});

describe('EMF counts', () => {
  afterEach(() => vi.unstubAllEnvs());

  const on = {
    LOG_LEVEL: 'silent',
    POWERTOOLS_METRICS_DISABLED: 'false',
    POWERTOOLS_METRICS_NAMESPACE: 'deskpipe-test',
  };

  it('counts a success by the route metric, once: not for its idempotent replay', async () => {
    const { httpHandler } = await load(on);
    const create = httpHandler(
      { route: { name: 'createThing', scope: 'tickets:read' }, body: true, metric: 'TicketCreated' },
      async () => ({
        statusCode: 201,
        body: { id: 1 },
      }),
    );
    const key = { 'Idempotency-Key': `log-${Date.now()}-${Math.random()}` };
    const { lines } = await output(async () => {
      expect((await create(post(key), lambdaContext)).statusCode).toBe(201);
      const replay = await create(post(key), lambdaContext);
      expect(replay.headers?.['Idempotent-Replayed']).toBe('true');
    });
    expect(lines).toEqual([
      {
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: 'deskpipe-test',
              Dimensions: [['service', 'route']],
              Metrics: [{ Name: 'TicketCreated', Unit: 'Count' }],
            },
          ],
        },
        service: 'deskpipe',
        route: 'createThing',
        TicketCreated: 1,
      },
    ]);
  });

  it('counts 4xx and 5xx answers by route, and nothing for a plain success', async () => {
    const { httpHandler } = await load(on);
    const list = httpHandler({ route: { name: 'listThings', scope: 'tickets:read' } }, async () => ({
      statusCode: 200,
      body: [],
    }));
    const create = httpHandler(
      { route: { name: 'createThing', scope: 'tickets:read' }, body: true, metric: 'TicketCreated' },
      async () => {
        throw new Error('boom');
      },
    );
    const { lines } = await output(async () => {
      await list(proxyEvent({ path: '/api/things', caller }), lambdaContext);
      await list(proxyEvent({ path: '/api/things' }), lambdaContext); // no caller: 401
      await create(post({ 'Content-Type': 'text/plain' }), lambdaContext); // 415 before the handler
      await create(post(), lambdaContext); // 500
    });
    expect(
      lines.map(({ route, Responses4xx, Responses5xx, TicketCreated }) => ({
        route,
        Responses4xx,
        Responses5xx,
        TicketCreated,
      })),
    ).toEqual([
      { route: 'listThings', Responses4xx: 1 },
      { route: 'createThing', Responses4xx: 1 },
      { route: 'createThing', Responses5xx: 1 },
    ]);
  });

  it('counts TicketCreated and DealCreated on the real create routes', async () => {
    const { createTicket, createDeal } = await load(on);
    const stages = [{ name: 'Lead', color: '#000000', probability: 10 }];
    const account = await createTestAccount({ pipelines: [{ name: 'Sales', default: true, stages }] });
    const event = (path: string, input: Record<string, unknown>) =>
      proxyEvent({ method: 'POST', path, caller: callerOf(account), body: input });
    const { lines } = await output(async () => {
      const ticket = { ...body, description: 'Cannot log in.' };
      expect((await createTicket(event('/api/tickets', ticket), lambdaContext)).statusCode).toBe(201);
      const deal = {
        name: 'Deal',
        contact_email: 'deal@client.test',
        contact_first_name: 'D',
        contact_last_name: 'C',
      };
      expect((await createDeal(event('/api/deals', deal), lambdaContext)).statusCode).toBe(201);
    });
    expect(lines).toEqual([
      expect.objectContaining({ route: 'createTicket', TicketCreated: 1 }),
      expect.objectContaining({ route: 'createDeal', DealCreated: 1 }),
    ]);
  });

  it('writes nothing outside Lambda unless asked, and counts in Lambda by default', async () => {
    const request = async (env: Record<string, string | undefined>) => {
      const { httpHandler } = await load({
        LOG_LEVEL: 'silent',
        POWERTOOLS_METRICS_DISABLED: undefined,
        ...env,
      });
      const broken = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async () => {
        throw new Error('boom');
      });
      return (await output(() => broken(post(), lambdaContext))).lines.length;
    };
    expect(await request({ AWS_LAMBDA_FUNCTION_NAME: undefined })).toBe(0);
    expect(await request({ AWS_LAMBDA_FUNCTION_NAME: 'deskpipe-dev-createTicket' })).toBe(1);
    expect(
      await request({
        AWS_LAMBDA_FUNCTION_NAME: 'deskpipe-dev-createTicket',
        POWERTOOLS_METRICS_DISABLED: 'true',
      }),
    ).toBe(0);
  });
});
