import { afterAll, describe, expect, it, vi } from 'vitest';
import { dynamo } from '#lib/data/store/client.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { capturedOutput } from '#test/support/output.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * The local gateway serves overlapping requests in one process: each request's log lines carry its own keys
 * (docs/architecture.md, "Request ids and logs"), however its work interleaves with another's.
 *
 * The logger reads LOG_LEVEL when lib/log.ts loads (tests run SILENT): it is set before this file's imports, and
 * no setup file loads the logger. The service's clock stands still (the manual clock), so a stalled request never
 * reaches its deadline however long the other takes.
 */
// The api tier's files share a module graph in a worker (vitest.config.ts): the modules an earlier file loaded
// (its logger silent) are dropped, so this file's imports load the logger afresh, and after it the next file's.
vi.hoisted(() => {
  vi.stubEnv('LOG_LEVEL', 'info');
  vi.resetModules();
});
afterAll(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});
useManualClock({ wholeFile: true });

describe('log keys of overlapping requests', () => {
  const gateway = useGateway();

  it('each request logs its own request id and account, while another runs in between', async () => {
    const [slow, quick] = await Promise.all([createTestAccount(), createTestAccount()]);
    // The slow request's first read (its route's Query: the authorizer only gets items) waits until the quick
    // request has answered.
    let stalled = false;
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand' && JSON.stringify(args.input).includes(slow.accountId)) {
          stalled = true;
          await released;
        }
        return next(args);
      },
      { step: 'initialize', name: 'stallSlowRequest', priority: 'high' },
    );
    try {
      const { lines } = await capturedOutput(async () => {
        const slowAnswer = gateway.call('GET', '/api/pipelines', {
          key: slow.apiKey,
          headers: { 'X-Request-Id': 'req-slow' },
        });
        await waitFor(() => stalled, { timeout: 20_000, label: 'the slow request to stall' });
        const quickAnswer = await gateway.call('GET', '/api/pipelines', {
          key: quick.apiKey,
          headers: { 'X-Request-Id': 'req-quick' },
        });
        expect(quickAnswer.status).toBe(200);
        release();
        expect((await slowAnswer).status).toBe(200);
      });
      const requests = lines.filter((line) => line.message === 'request');
      expect(requests.map((line) => [line.requestId, line.accountId, line.route, line.status])).toEqual([
        ['req-quick', quick.accountId, 'listPipelines', 200],
        ['req-slow', slow.accountId, 'listPipelines', 200],
      ]);
      // Lambda's own fields stay: each line names its own invocation.
      for (const line of requests) expect(line.function_request_id).toBe(line.requestId);
    } finally {
      release();
      dynamo.middlewareStack.remove('stallSlowRequest');
    }
  });
});
