import { describe, expect, it } from 'vitest';
import { listKeys } from '#lib/accounts/key-management.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { sweepPositions, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A key create under a fault at every store call it makes, then its retry with the same Idempotency-Key. */
describe('key create under faults', () => {
  // Cached like the deployed gateway: the calls counted are the route's own.
  const gateway = useGateway(30);

  it.each(['lost-request', 'lost-answer', 'conflict'] as const)(
    'a %s at any call of a create, then its retry with the same Idempotency-Key: exactly one key',
    async (mode) => {
      const probe = await createTestAccount();
      const call = (key: string, idempotencyKey: string) =>
        gateway.call('POST', '/api/keys', {
          key,
          body: { name: 'Faulty', scopes: ['deals:read'] },
          headers: { 'Idempotency-Key': idempotencyKey },
        });
      await gateway.call('GET', '/api/keys', { key: probe.apiKey }); // the authorizer's answer cached
      const { operations } = await withFault(undefined, () => call(probe.apiKey, 'probe'));
      expect(operations.length).toBeGreaterThanOrEqual(5);
      // A conflict only meets the key's transaction: reads cannot conflict, no transaction holds the rate item,
      // and a conflict on the Idempotency-Key's claim is its own (test/system/sweeps/deals-faults.test.ts).
      const positions = operations
        .map((op, i) => [op, i + 1] as const)
        .filter(([op]) => mode !== 'conflict' || op === 'TransactWriteItems')
        .map(([, at]) => at);
      expect(positions.length).toBeGreaterThan(0);
      // A few positions at once, each on an account of its own.
      await sweepPositions(positions, async (at) => {
        const account = await createTestAccount();
        await gateway.call('GET', '/api/keys', { key: account.apiKey });
        const { result: first } = await withFault({ at, mode }, () => call(account.apiKey, `fault-${at}`));
        expect([201, 503], `${mode} at ${at}: ${first.text}`).toContain(first.status);
        let retry = await call(account.apiKey, `fault-${at}`);
        for (let n = 0; retry.status === 409 && n < 20; n++) {
          await pause(250);
          retry = await call(account.apiKey, `fault-${at}`);
        }
        expect(retry.status, `${mode} at ${at}: ${retry.text}`).toBe(201);
        const made = (await listKeys(account.accountId)).filter((k) => k.name === 'Faulty');
        expect(made, `${mode} at ${at}`).toHaveLength(1);
        expect(retry.body.data.id).toBe(made[0]?.id);
      });
    },
    120_000,
  );
});
