import { randomBytes } from 'node:crypto';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';

/** A fresh account with a unique slug, applied through the real admin path. */
export async function createTestAccount(file: Record<string, unknown> = {}) {
  const slug = `t-${randomBytes(6).toString('hex')}`;
  const state = await applyAccountFile({ slug, name: `Test ${slug}`, plan: 'pro', ...file });
  if (!state.api_key) throw new Error('first apply must issue a key');
  return { ...state, slug, apiKey: state.api_key, accountId: state.account.id };
}
