import { describe, expect, it } from 'vitest';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { representativePositions, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { ticketBody } from '#test/support/tickets.ts';

/**
 * The fault plan is the run's (test/support/faults.ts): two `withFault` runs at once, each through the local
 * gateway, count their own calls only and only the faulted one fails, as the sweeps running positions at once
 * (sweepPositions) need.
 */
const gateway = useGateway();
// The service's clock stands still: the runs compared make the same calls whatever the machine's load (the rules
// cache's freshness check, a GetItem once 5 s have passed, would otherwise come in one run and not another).
useManualClock({ lazy: true });

const post = (account: TestAccount, tag: string) =>
  gateway.call('POST', '/api/tickets', {
    key: account.apiKey,
    body: ticketBody({ subject: `Printer ${tag}` }),
    headers: { 'Idempotency-Key': tag },
  });

describe('withFault runs at once', () => {
  it('each counts its own calls, and the fault fails only the run that planned it', async () => {
    const [a, b] = await Promise.all([createTestAccount(), createTestAccount()]);
    // Warm: each account's settings read once, then cached, as for the runs below.
    expect((await post(a, 'warm-a')).status).toBe(201);
    expect((await post(b, 'warm-b')).status).toBe(201);
    const alone = await withFault(undefined, () => post(a, 'alone'));
    expect(alone.result.status).toBe(201);
    const calls = [...alone.operations].sort();
    const commitAt = alone.operations.lastIndexOf('TransactWriteItems') + 1;
    expect(commitAt).toBeGreaterThan(0);

    for (let round = 0; round < 3; round++) {
      const [failed, clean] = await Promise.all([
        withFault({ at: commitAt, mode: 'lost-request' }, () => post(a, `failed-${round}`)),
        withFault(undefined, () => post(b, `clean-${round}`)),
      ]);
      expect(clean.result.status, clean.result.text).toBe(201);
      expect([...clean.operations].sort()).toEqual(calls);
      expect(failed.result.status, failed.result.text).toBe(503);
      expect(failed.operations[commitAt - 1]).toBe('TransactWriteItems');
    }
  });
});

describe('representativePositions', () => {
  it('fails every call, but only the ends, the second and the middle of a long run of one operation', () => {
    const updates = Array.from({ length: 10 }, () => 'UpdateItem');
    expect(representativePositions(['GetItem', ...updates, 'TransactWriteItems'])).toEqual([
      1, 2, 3, 7, 11, 12,
    ]);
    // Runs of up to four are failed whole; an operation coming back after another starts a run of its own.
    const short = ['GetItem', 'GetItem', 'GetItem', 'GetItem', 'Query', 'GetItem'];
    expect(representativePositions(short)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(representativePositions(['Query', ...updates.slice(0, 5)])).toEqual([1, 2, 3, 4, 6]);
    expect(representativePositions([])).toEqual([]);
  });
});
