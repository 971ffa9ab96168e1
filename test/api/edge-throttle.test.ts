import { describe, expect, it } from 'vitest';
import { gatewayAnswers } from '#infra/api-contract.ts';
import { PLAN_EDGE_LIMITS } from '#lib/accounts/edge-limits.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * A tenant throttled at the edge (docs/capacity.md, "Tenants at the edge"): the local gateway runs API Gateway's
 * usage-plan throttle, a token bucket per account (the authorizer's usageIdentifierKey) at its plan's rate and burst
 * (lib/accounts/edge-limits.ts, the figures the stack's usage plans are made of), and answers past it as the
 * deployed stage does (the THROTTLED gateway answer), before any function runs. The clock stands still unless the
 * test moves it, so a bucket refills only by what the test advances: no real waits.
 */
const gateway = useGateway();
const clock = useManualClock();

/** An account at its plan's own limits (the tests' accounts otherwise have the per-minute limit out of the way). */
const planAccount = (plan: 'pro' | 'enterprise') => createTestAccount({ plan, rate_limit_per_minute: null });
const list = (account: TestAccount) => gateway.call('GET', '/api/pipelines', { key: account.apiKey });
const statuses = async (account: TestAccount, n: number) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await list(account)).status);
  return out;
};

describe('the edge throttle', () => {
  it("throttles account A at its plan's burst and rate, answering as API Gateway does, while account B is served", async () => {
    const [a, b] = [await planAccount('pro'), await planAccount('pro')];
    const { rateLimit, burstLimit } = PLAN_EDGE_LIMITS.pro;
    expect(await statuses(a, burstLimit)).toEqual(Array(burstLimit).fill(200));

    const throttled = await list(a);
    expect(throttled.status).toBe(gatewayAnswers.THROTTLED.statusCode);
    expect(throttled.body).toEqual(gatewayAnswers.THROTTLED.body);
    expect(throttled.headers.get('retry-after')).toBe('1');
    expect(throttled.headers.get('x-request-id')).toBeTruthy();
    // Refused at the edge: the function did not run, so the account's per-minute count did not move.
    expect(throttled.headers.get('x-ratelimit-remaining')).toBeNull();

    // Another account of the same plan has a bucket of its own.
    expect(await statuses(b, burstLimit)).toEqual(Array(burstLimit).fill(200));

    // A second refills `rateLimit` tokens: that many pass, the next is refused again.
    await clock().advance(1000);
    expect(await statuses(a, rateLimit + 1)).toEqual([...Array(rateLimit).fill(200), 429]);
  });

  it("gives each plan its own figures: an enterprise account's burst is past a pro account's", async () => {
    const enterprise = await planAccount('enterprise');
    const { burstLimit } = PLAN_EDGE_LIMITS.enterprise;
    expect(burstLimit).toBeGreaterThan(PLAN_EDGE_LIMITS.pro.burstLimit);
    expect(await statuses(enterprise, burstLimit + 1)).toEqual([...Array(burstLimit).fill(200), 429]);
  });

  it('throttles no route without a key: a public route is not counted', async () => {
    const a = await planAccount('pro');
    expect(await statuses(a, PLAN_EDGE_LIMITS.pro.burstLimit + 1)).toContain(429);
    expect((await gateway.call('GET', '/api/openapi.json')).status).toBe(200);
  });
});
