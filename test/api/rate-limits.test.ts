import { describe, expect, it } from 'vitest';
import { AccountFileInvalid } from '#lib/accounts/account-file.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { nowMicros } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { sequencesOf } from '#test/support/sequences.ts';

/** Rate limits per plan (decisions.md): exact under concurrency, visible in headers, refusing without a change. */
const gateway = useGateway();
const clock = useManualClock();

/** The clock moved to the start of a later minute, so that a test's requests all fall in one window. */
async function startOfMinute(offsetMinutes = 0) {
  const minute = Math.floor(nowMicros() / 60_000_000) + 1 + offsetMinutes;
  await clock().advanceTo(minute * 60_000 + 1_000);
  return { minute, resetAt: (minute + 1) * 60 };
}

const ticket = (subject: string) => ({ subject, description: 'd', requester_email: 'rate@client.test' });

describe('rate limits per plan', () => {
  it('lets exactly the limit through of 30 concurrent requests, and the next minute resets', async () => {
    const account = await createTestAccount({ rate_limit_per_minute: 20 });
    const { resetAt } = await startOfMinute();
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => gateway.call('GET', '/api/pipelines', { key: account.apiKey })),
    );
    const passed = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(passed).toHaveLength(20);
    expect(limited).toHaveLength(10);
    // Remaining counts down: the 20 answers hold 19..0, each once.
    expect(passed.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i),
    );
    for (const r of passed) {
      expect(r.headers.get('x-ratelimit-limit')).toBe('20');
      expect(r.headers.get('ratelimit-policy')).toBe('"minute";q=20;w=60');
      expect(r.headers.get('ratelimit')).toBe(`"minute";r=${r.headers.get('x-ratelimit-remaining')};t=59`);
    }
    for (const r of limited) {
      expect(r.body).toEqual({ message: 'Too Many Attempts.' });
      expect(r.headers.get('retry-after')).toBe('59');
      expect(r.headers.get('x-ratelimit-reset')).toBe(String(resetAt));
      expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(r.headers.get('x-request-id')).toBeTruthy();
    }
    await startOfMinute(1);
    const next = await gateway.call('GET', '/api/pipelines', { key: account.apiKey });
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('19');
  });

  it('after an idle minute, racing requests below the limit all pass: 20 times over, 4 and 16 at once', async () => {
    const limit = 100;
    const account = await createTestAccount({ rate_limit_per_minute: limit });
    let { minute } = await startOfMinute();
    const call = () => gateway.call('GET', '/api/pipelines', { key: account.apiKey });
    const inMinute = (m: number) => clock().advanceTo(m * 60_000 + 1_000);
    for (const burst of [4, 16]) {
      for (let trial = 0; trial < 20; trial++) {
        // One request in minute X, none in X + 1, then the burst in X + 2: its slot still holds minute X.
        await inMinute(minute);
        expect((await call()).status).toBe(200);
        await inMinute(minute + 2);
        const answers = await Promise.all(Array.from({ length: burst }, call));
        const label = `${burst} at once, trial ${trial + 1}`;
        expect(
          answers.map((a) => a.status),
          label,
        ).toEqual(answers.map(() => 200));
        // Each counted once: remaining limit - 1 down to limit - burst.
        const remaining = answers.map((a) => Number(a.headers.get('x-ratelimit-remaining')));
        expect(
          remaining.sort((a, b) => b - a),
          label,
        ).toEqual(answers.map((_, i) => limit - 1 - i));
        minute += 4;
      }
    }
  }, 120_000);

  it('a refused POST stores nothing and takes no reference number', async () => {
    const account = await createTestAccount({ rate_limit_per_minute: 3 });
    await startOfMinute();
    const created = [];
    for (let i = 0; i < 3; i++) {
      const response = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: ticket(`Allowed ${i}`),
      });
      expect(response.status).toBe(201);
      expect(response.headers.get('x-ratelimit-remaining')).toBe(String(2 - i));
      created.push(response.body.ticket.reference);
    }
    const before = await sequencesOf(account.accountId);
    for (const headers of [{}, { 'Idempotency-Key': 'limited-1' }] as Record<string, string>[]) {
      const refused = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: ticket('Refused'),
        headers,
      });
      expect(refused.status).toBe(429);
      const deal = await gateway.call('POST', '/api/deals', {
        key: account.apiKey,
        body: { name: 'D', contact_email: 'new@rate.test', contact_first_name: 'N' },
        headers,
      });
      expect(deal.status).toBe(429);
    }
    expect(await sequencesOf(account.accountId)).toEqual(before);
    await startOfMinute(1);
    const list = await gateway.call('GET', '/api/tickets?search=refused', { key: account.apiKey });
    expect(list.body.meta.total).toBe(0);
    // The key of the refused request kept nothing: it runs now, and takes the next number.
    const retried = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: ticket('Refused'),
      headers: { 'Idempotency-Key': 'limited-1' },
    });
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.ticket.reference).toBe(
      created[2]?.replace(/\d+$/, (n: string) => String(Number(n) + 1).padStart(6, '0')),
    );
  });

  it('counts every answer past authentication, a 422 too, with its headers', async () => {
    const account = await createTestAccount({ rate_limit_per_minute: 2 });
    await startOfMinute();
    const invalid = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: {} });
    expect(invalid.status).toBe(422);
    expect(invalid.headers.get('x-ratelimit-remaining')).toBe('1');
    const badJson = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: '{' });
    expect(badJson.status).toBe(400);
    expect(badJson.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await gateway.call('GET', '/api/tickets', { key: account.apiKey })).status).toBe(429);
    // Gateway-made answers are before authentication: no rate headers.
    const unauthenticated = await gateway.call('GET', '/api/tickets');
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('takes the plan limits, and the account file override: validated, printed, null back to the plan', async () => {
    const account = await createTestAccount({ plan: 'enterprise', rate_limit_per_minute: null });
    expect(account.account.rate_limit_per_minute).toBe(1000);
    const base = { slug: account.slug, name: account.account.name };
    expect((await applyAccountFile({ ...base, plan: 'pro' })).account.rate_limit_per_minute).toBe(400);
    expect(
      (await applyAccountFile({ ...base, plan: 'pro', rate_limit_per_minute: 7 })).account
        .rate_limit_per_minute,
    ).toBe(7);
    expect((await applyAccountFile({ ...base, plan: 'pro' })).account.rate_limit_per_minute).toBe(7);
    for (const bad of [0, -1, 1.5, '10']) {
      await expect(applyAccountFile({ ...base, plan: 'pro', rate_limit_per_minute: bad })).rejects.toThrow(
        AccountFileInvalid,
      );
    }
    expect(
      (await applyAccountFile({ ...base, plan: 'pro', rate_limit_per_minute: null })).account
        .rate_limit_per_minute,
    ).toBe(400);
    await startOfMinute();
    const response = await gateway.call('GET', '/api/pipelines', { key: account.apiKey });
    expect(response.headers.get('x-ratelimit-limit')).toBe('400');
  });
});
