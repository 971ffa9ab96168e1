import { randomBytes } from 'node:crypto';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';

/**
 * A fresh account with a unique slug, applied through the real admin path. Tests make many requests a minute
 * on one account: unless a test sets its own, the rate limit is out of the way.
 */
export async function createTestAccount(file: Record<string, unknown> = {}) {
  const slug = `t-${randomBytes(6).toString('hex')}`;
  const state = await applyAccountFile({
    slug,
    name: `Test ${slug}`,
    plan: 'pro',
    rate_limit_per_minute: 1_000_000,
    ...file,
  });
  if (!state.api_key) throw new Error('first apply must issue a key');
  return { ...state, slug, apiKey: state.api_key, accountId: state.account.id };
}

/** The `agents` of an account file: `n` agents, agent1@desk.test to agent<n>@desk.test, each with `extra`. */
export function agentsFile(n: number, extra: Record<string, unknown> = {}) {
  return Array.from({ length: n }, (_, i) => ({
    email: `agent${i + 1}@desk.test`,
    name: `Agent ${i + 1}`,
    ...extra,
  }));
}
