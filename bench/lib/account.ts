import { applyAccountFile } from '#lib/accounts/apply-account.ts';

/**
 * A bench account from an account file. Its rate limit is one the bench never reaches: it measures each
 * request's cost (its rate count included), not the limit.
 */
export async function benchAccount(slug: string, file: Record<string, unknown> = {}) {
  const state = await applyAccountFile({
    slug,
    name: slug,
    plan: 'pro',
    rate_limit_per_minute: 1_000_000,
    ...file,
  });
  return { ...state, accountId: state.account.id, apiKey: state.api_key ?? '' };
}
