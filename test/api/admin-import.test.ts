import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importBody, runImportCommand } from '#infra/admin/import-command.ts';
import { UPLOAD_DIR_VARIABLE } from '#lib/data/imports/uploads.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { createTestAccount } from '#test/support/accounts.ts';

/**
 * `admin import` (operations.md, "Imports"): the job the API starts, run by the command to its end with its
 * progress written as lines when not on a terminal; Ctrl-C pauses it at a checkpoint and the same command resumes
 * it, each record once; secrets only from a file.
 */
const EXAMPLE = new URL('../../examples/import.ndjson', import.meta.url).pathname;
const created = (n: number) => ({ source: n, created: n, updated: 0, unchanged: 0, failed: 0 });
let dir: string;

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-admin-import-'));
  process.env[UPLOAD_DIR_VARIABLE] = dir;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Progress as a log reads it (not a terminal). */
function lines() {
  const out: string[] = [];
  return { out, progress: { write: (text: string) => out.push(text), isTTY: false } };
}

describe('admin import', () => {
  it('runs an ndjson file to its end: the job as GET answers it, and its progress as lines', async () => {
    const account = await createTestAccount();
    const log = lines();
    const result = await runImportCommand(account.accountId, ['--file', EXAMPLE], {
      progress: log.progress,
      interrupted: () => false,
    });
    expect(result.import).toMatchObject({
      source: 'ndjson',
      status: 'completed',
      progress: { done: 4, total: 4 },
    });
    expect(result.import.counts).toMatchObject({
      tickets: created(4),
      messages: created(10),
      contacts: created(3),
    });
    expect(log.out[0]).toMatch(/^import imp_\w+: (queued|running), agents: 0/);
    expect(log.out.at(-1)).toMatch(/: completed, tickets: 4\/4 tickets\n$/);
  });

  it('Ctrl-C pauses at the next checkpoint; the same command resumes it, every record once', async () => {
    const account = await createTestAccount();
    let steps = 0;
    const log = lines();
    const first = await runImportCommand(account.accountId, ['--file', EXAMPLE], {
      progress: { ...log.progress, write: (text: string) => log.out.push(text) && steps++ },
      interrupted: () => steps >= 3,
    });
    expect(first.import.status).toBe('paused');
    expect(first.import.progress.done).toBeLessThan(4);
    const again = await runImportCommand(account.accountId, ['--file', EXAMPLE], {
      progress: lines().progress,
      interrupted: () => false,
    });
    expect(again.import.id).toBe(first.import.id);
    expect(again.import).toMatchObject({ status: 'completed', progress: { done: 4, total: 4 } });
    expect(again.import.counts).toMatchObject({ tickets: created(4), agents: created(2), teams: created(2) });
  });

  it('reads secrets from their files (stdin for -), never from an argument', async () => {
    const token = join(dir, 'token');
    await writeFile(token, 'zd-secret-token\n');
    const read = (file: string) => (file === token ? 'zd-secret-token\n' : '');
    const args = [
      '--source',
      'zendesk',
      '--subdomain',
      'acme',
      '--email',
      'a@acme.test',
      '--token-file',
      token,
    ];
    expect(importBody(args, read)).toEqual({
      source: 'zendesk',
      subdomain: 'acme',
      email: 'a@acme.test',
      api_token: 'zd-secret-token',
      mode: 'run',
    });
    expect(() => importBody(['--source', 'zendesk', '--subdomain', 'acme', '--token', 'x'], read)).toThrow(
      /--token-file is needed/,
    );
    expect(
      importBody(['--source', 'freshdesk', '--domain', 'acme', '--key-file', token, '--validate'], read),
    ).toEqual({
      source: 'freshdesk',
      domain: 'acme',
      api_key: 'zd-secret-token',
      mode: 'validate',
    });
  });
});
