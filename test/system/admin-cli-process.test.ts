import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '#infra/local/environment.ts';

const run = promisify(execFile);

/**
 * The admin CLI as a separate process, for what only the process shows: the JSON of a command on stdout with
 * exit code 0, a refusal on stderr with a non-zero code and nothing on stdout, and usage with exit code 2. The
 * commands themselves are tested in-process (test/api/admin-cli.test.ts). A table of its own.
 */
const tableName = `deskpipe-cli-${randomBytes(4).toString('hex')}`;

async function cli(...args: string[]) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'infra/admin/cli.ts', ...args],
      {
        cwd: ROOT,
        env: { ...process.env, TABLE_NAME: tableName },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function accountFile(content: unknown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'deskpipe-'));
  const path = join(dir, 'account.json');
  await writeFile(path, JSON.stringify(content));
  return path;
}

describe('admin CLI (separate process)', () => {
  it('prints the applied account as JSON on stdout and exits 0, and refuses a bad file on stderr', async () => {
    const applied = await cli('apply', await accountFile({ slug: 'proc', name: 'Proc', plan: 'pro' }));
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout)).toMatchObject({ api_key: expect.stringMatching(/^dpk_/) });

    const refused = await cli('apply', await accountFile({ slug: 'proc', name: 'Proc', plan: 'gold' }));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('plan: must be one of startup, pro, enterprise');
  });

  it('prints usage and exits 2 for an unknown command', async () => {
    const result = await cli('frobnicate');
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('usage:');
  });
});
