import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler } from '#functions/trash-purge.ts';
import { PURGE_POLL_MS } from '#lib/trash/purge.ts';

/**
 * The purge deployed (functions/trash-purge.ts): the scheduled function runs npm start's purge runner, and returns
 * once a pass leaves nothing due instead of waiting for the next poll (the schedule is its poll). What a pass purges
 * is test/api/trash.test.ts's ("the purge"); this checks the function around it, its DynamoDB actions against its
 * grant (test/support/table-actions.ts: the function's handler is wrapped as `trashPurge`). The table is shared by
 * every test file, so nothing here moves the clock to make another file's trash due.
 */
describe('the purge function', () => {
  it('runs passes until nothing is due, then returns at once, well inside its schedule', async () => {
    const context = { getRemainingTimeInMillis: () => 290_000, awsRequestId: 'purge-test' } as Context;
    const started = Date.now();
    await handler(undefined, context);
    expect(Date.now() - started).toBeLessThan(Math.min(PURGE_POLL_MS, 20_000));
  });

  it('runs nothing when the invocation has no time left beyond its margin', async () => {
    const context = { getRemainingTimeInMillis: () => 10_000, awsRequestId: 'purge-late' } as Context;
    const started = Date.now();
    await handler(undefined, context);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
