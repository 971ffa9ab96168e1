import { randomBytes } from 'node:crypto';
import { beforeAll } from 'vitest';
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

export type TestAccount = Awaited<ReturnType<typeof createTestAccount>>;

/**
 * A fresh account for the tests of this file (or of the describe block it is called in), created before them:
 * `const account = useTestAccount()`. Read it from tests and hooks, not while the file is being collected.
 */
export function useTestAccount(file: Record<string, unknown> = {}): TestAccount {
  let created: TestAccount | undefined;
  beforeAll(async () => {
    created = await createTestAccount(file);
  });
  return new Proxy({} as TestAccount, {
    get(_target, property) {
      if (!created) throw new Error('useTestAccount(): the account exists in tests and hooks only');
      return created[property as keyof TestAccount];
    },
  });
}

/** The `agents` of an account file: `n` agents, agent1@desk.test to agent<n>@desk.test, each with `extra`. */
export function agentsFile(n: number, extra: Record<string, unknown> = {}) {
  return Array.from({ length: n }, (_, i) => ({
    email: `agent${i + 1}@desk.test`,
    name: `Agent ${i + 1}`,
    ...extra,
  }));
}
