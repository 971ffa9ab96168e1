import { describe, expect, it } from 'vitest';
import { erasurePass } from '#lib/erasures/runner.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The erasure runner shares each pass by account (lib/erasures/runner.ts, lib/fair-share.ts), as the breach runner,
 * the outbox and the purge do: one account's many erasures, due first, do not hold back another account's one.
 */
describe('the erasure runner, one account erasing many people', () => {
  const gateway = useGateway();
  const clock = useManualClock();

  it("runs another account's erasure in the first pass, not after the 30 asked before it", async () => {
    const [big, small] = await Promise.all([createTestAccount(), createTestAccount()]);
    const erase = async (key: string, email: string) => {
      const answer = await gateway.call('POST', '/api/erasures', { key, body: { email } });
      expect(answer.status, answer.text).toBe(202);
      return answer.body.data.id as string;
    };
    // The big account's 30 asked 10 ms apart, the small account's a second after them (its due entry the last).
    for (let i = 0; i < 30; i++) {
      await erase(big.apiKey, `person-${i}@many.test`);
      await clock().advance(10);
    }
    await clock().advance(1_000);
    const other = await erase(small.apiKey, 'one@few.test');
    await clock().advance(1_000);

    const pass = await erasurePass({ cursors: new Map() });
    // 20 erasures a pass (ERASURE_BATCH), shared: the small account's is one of them, and it completes.
    const status = (await gateway.call('GET', `/api/erasures/${other}`, { key: small.apiKey })).body.data
      .status;
    expect(status).toBe('completed');
    expect(pass.completed).toBe(20);
    expect(pass.more).toBe(true);
  });
});
