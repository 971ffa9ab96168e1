import { readFile } from 'node:fs/promises';
import { AccountFileInvalid } from '#lib/accounts/account-file.ts';
import { describeApiKeys, issueApiKey, revokeApiKeyById } from '#lib/accounts/api-keys.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { reindex } from '#lib/accounts/reindex.ts';
import { findAccountIdBySlug } from '#lib/data/accounts.ts';
import { isIndexedEntityName } from '#lib/data/reindex.ts';

/**
 * The admin commands (README.md, "Admin command line"), independent of how the store was reached (cli.ts does
 * that).
 * Success: one JSON object for stdout. Failure: a CommandError whose message goes to stderr.
 */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export const USAGE = `usage: npm run --silent admin -- <command>
  apply FILE [--new-key]   create or update the account described by FILE
  keys create SLUG         new API key for the account
  keys list SLUG           the account's keys (never the secret)
  keys revoke KEY_ID       revoke a key
  tickets reindex SLUG     rebuild the account's ticket index from its tickets (while it takes no writes)
  deals reindex SLUG       the same for its deals
  contacts reindex SLUG    the same for its contacts
options: --aws  use the deployed table named by TABLE_NAME (AWS credentials from the environment)`;

export async function runCommand(args: string[]): Promise<Record<string, unknown>> {
  const [command, ...rest] = args.filter((a) => a !== '--aws');
  if (command === 'apply') {
    const file = rest.find((a) => !a.startsWith('--'));
    const unknown = rest.filter((a) => a.startsWith('--') && a !== '--new-key');
    if (!file || unknown.length > 0) throw new CommandError(USAGE, 2);
    return apply(file, rest.includes('--new-key'));
  }
  if (command === 'keys') {
    const [action, target, ...extra] = rest;
    if (!target || extra.length > 0) throw new CommandError(USAGE, 2);
    if (action === 'create')
      return issueApiKey(await accountIdOf(target)) as unknown as Record<string, unknown>;
    if (action === 'list') return { keys: await describeApiKeys(await accountIdOf(target)) };
    if (action === 'revoke') {
      const revoked = await revokeApiKeyById(target);
      if (!revoked) throw new CommandError(`no API key has the id ${target}`);
      return revoked;
    }
  }
  if (command && isIndexedEntityName(command)) {
    const [action, slug, ...extra] = rest;
    if (action === 'reindex' && slug && extra.length === 0) return reindex(command, await accountIdOf(slug));
  }
  throw new CommandError(USAGE, 2);
}

async function apply(path: string, newKey: boolean) {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new CommandError(`${path}: cannot read a JSON account file (${(error as Error).message})`);
  }
  try {
    return await applyAccountFile(raw, { newKey });
  } catch (error) {
    if (error instanceof AccountFileInvalid) {
      throw new CommandError(`${path} is not a valid account file; nothing was written:\n${error.message}`);
    }
    throw error;
  }
}

async function accountIdOf(slug: string): Promise<string> {
  const id = await findAccountIdBySlug(slug);
  if (!id) throw new CommandError(`no account has the slug ${slug}`);
  return id;
}
