import { readFile } from 'node:fs/promises';
import { AccountFileInvalid } from '#lib/accounts/account-file.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { listKeys, revokeKeyById } from '#lib/accounts/key-management.ts';
import { reindex } from '#lib/accounts/reindex.ts';
import { EVERY_SCOPE, type Grant, isGrant } from '#lib/accounts/scopes.ts';
import { findAccountIdBySlug } from '#lib/data/accounts/accounts.ts';
import { isIndexedEntityName } from '#lib/data/reindex.ts';
import { tableName } from '#lib/data/store/client.ts';
import { replayErasures } from '#lib/erasures/replay.ts';
import { nowMicros } from '#lib/time.ts';
import { sdkEdgeApi } from './edge-api.ts';
import { placeAtEdge } from './edge-keys.ts';
import { ImportUsage, runImportCommand } from './import-command.ts';

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
  keys create SLUG [--name N] [--scopes a,b] [--expires-in 90d]
                           new API key for the account (no --scopes: every scope, *)
  keys list SLUG           the account's keys (never the secret)
  keys revoke KEY_ID       revoke a key
  tickets reindex SLUG     rebuild the account's ticket index from its tickets (while it takes no writes)
  deals reindex SLUG       the same for its deals
  contacts reindex SLUG    the same for its contacts
  import SLUG --source zendesk --subdomain S --email E --token-file F [--validate] [--since T]
  import SLUG --source freshdesk --domain D --key-file F [--validate] [--since T]
  import SLUG --file export.ndjson [--validate] [--since T]
                           run an import for the account to its end (a progress bar on stderr); secrets from a
                           file (- for stdin); Ctrl-C pauses it, the same command resumes it
  erasures replay [--ledger-from TABLE]
                           after a restore from backup, erase again every person in the erasure ledger
                           (the ledger read from TABLE, the table that was live, when given)
options: --aws  use the deployed table named by TABLE_NAME (AWS credentials from the environment); apply
                then also puts the account's API Gateway key in its plan's usage plan (API Gateway's SDK client)`;

export async function runCommand(args: string[]): Promise<Record<string, unknown>> {
  const [command, ...rest] = args.filter((a) => a !== '--aws');
  if (command === 'apply') {
    const file = rest.find((a) => !a.startsWith('--'));
    const unknown = rest.filter((a) => a.startsWith('--') && a !== '--new-key');
    if (!file || unknown.length > 0) throw new CommandError(USAGE, 2);
    const state = await apply(file, rest.includes('--new-key'));
    // Deployed, the account's API Gateway key in its plan's usage plan (infra/admin/edge-keys.ts); the stage's
    // resources are named as its table is (`deskpipe-<stage>`).
    if (args.includes('--aws')) {
      const { id, plan, rate_limit_per_minute } = state.account;
      await placeAtEdge(sdkEdgeApi, tableName(), { id, plan, rateLimitPerMinute: rate_limit_per_minute });
    }
    return state;
  }
  if (command === 'keys') {
    const [action, target, ...extra] = rest;
    if (!target) throw new CommandError(USAGE, 2);
    if (action === 'create') return createKey(await accountIdOf(target), keyOptions(extra));
    if (extra.length > 0) throw new CommandError(USAGE, 2);
    if (action === 'list') return { keys: await listKeys(await accountIdOf(target)) };
    if (action === 'revoke') {
      const revoked = await revokeKeyById(target);
      if (!revoked) throw new CommandError(`no API key has the id ${target}`);
      return revoked;
    }
  }
  if (command === 'import') {
    const [slug, ...options] = rest;
    if (!slug || slug.startsWith('--')) throw new CommandError(USAGE, 2);
    const accountId = await accountIdOf(slug);
    return runImport(accountId, options);
  }
  if (command === 'erasures') {
    const [action, ...extra] = rest;
    const from = extra[0] === '--ledger-from' ? extra[1] : undefined;
    if (action === 'replay' && (extra.length === 0 || (from && extra.length === 2))) {
      return replayErasures({ ledgerTable: from });
    }
  }
  if (command && isIndexedEntityName(command)) {
    const [action, slug, ...extra] = rest;
    if (action === 'reindex' && slug && extra.length === 0) return reindex(command, await accountIdOf(slug));
  }
  throw new CommandError(USAGE, 2);
}

/** `import`: run to its end with the progress on stderr; the first Ctrl-C pauses it, a second stops at once. */
async function runImport(accountId: string, options: string[]) {
  let interrupted = false;
  const onInterrupt = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write('\npausing at the next checkpoint (Ctrl-C again to stop at once)\n');
  };
  process.on('SIGINT', onInterrupt);
  try {
    return await runImportCommand(accountId, options, {
      progress: process.stderr,
      interrupted: () => interrupted,
    });
  } catch (error) {
    if (error instanceof ImportUsage) throw new CommandError(`${error.message}\n${USAGE}`, 2);
    throw error;
  } finally {
    process.off('SIGINT', onInterrupt);
  }
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

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `--name N`, `--scopes a,b` (default `*`), `--expires-in <n>s|m|h|d` (default: never). */
function keyOptions(args: string[]): { name: string; scopes: Grant[]; expiresAt?: number } {
  const options = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i] as string;
    const value = args[i + 1];
    if (!['--name', '--scopes', '--expires-in'].includes(flag) || value === undefined || options.has(flag))
      throw new CommandError(USAGE, 2);
    options.set(flag, value);
  }
  const name = (options.get('--name') ?? 'admin').trim();
  if (name === '' || name.length > 100) throw new CommandError('--name: 1 to 100 characters');
  const scopes = [...new Set((options.get('--scopes') ?? EVERY_SCOPE).split(',').map((s) => s.trim()))];
  const unknown = scopes.filter((s) => !isGrant(s));
  if (unknown.length > 0 || scopes.length === 0)
    throw new CommandError(`--scopes: unknown scope ${unknown.join(', ') || '(none)'}`);
  const expiresIn = options.get('--expires-in');
  if (expiresIn === undefined) return { name, scopes: scopes as Grant[] };
  const match = /^(\d{1,6})([smhd])$/.exec(expiresIn);
  const seconds = match ? Number(match[1]) * (DURATION_UNITS[match[2] as string] ?? 0) : 0;
  if (seconds <= 0)
    throw new CommandError('--expires-in: a positive duration such as 3600s, 90m, 12h or 90d');
  return { name, scopes: scopes as Grant[], expiresAt: nowMicros() + seconds * 1_000_000 };
}
