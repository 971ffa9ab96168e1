import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLING } from '#infra/constructs/deskpipe-function.ts';
import { ROOT } from '#infra/local/environment.ts';

/**
 * The Lambda bundles replace the SDK's default credential chain with the environment's credentials
 * (infra/bundling/env-credentials.ts): a bundle built as the stack builds it still signs with the credentials
 * Lambda puts in the environment, and carries none of the chain's STS/SSO clients.
 */
const dir = mkdtempSync(join(tmpdir(), 'deskpipe-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Lambda bundles', () => {
  it('resolve credentials from the environment, without the default chain', async () => {
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
      `import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
       const client = new DynamoDBClient({ region: 'eu-west-1' });
       const credentials = await client.config.credentials();
       process.stdout.write(JSON.stringify({ id: credentials.accessKeyId, token: credentials.sessionToken }));`,
    );
    const outfile = join(dir, 'entry.mjs');
    await build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: BUNDLING.target,
      mainFields: BUNDLING.mainFields,
      banner: { js: BUNDLING.banner },
      alias: BUNDLING.alias,
      absWorkingDir: ROOT,
      nodePaths: [join(ROOT, 'node_modules')],
      logLevel: 'silent',
    });
    const code = readFileSync(outfile, 'utf8');
    expect(code).not.toContain('credential-provider-sso');
    expect(code).not.toContain('AssumeRoleWithWebIdentity');
    const env = {
      PATH: process.env.PATH,
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'session',
    };
    const out = execFileSync(process.execPath, [outfile], { env }).toString();
    expect(JSON.parse(out)).toEqual({ id: 'AKIDEXAMPLE', token: 'session' });
  });
});
