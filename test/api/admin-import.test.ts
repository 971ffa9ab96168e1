import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importBody, OPERATOR_PAUSE_MS, runImportCommand } from '#infra/admin/import-command.ts';
import { activeImport } from '#lib/data/imports/active.ts';
import { getJob } from '#lib/data/imports/jobs.ts';
import { claimJob, pauseJob } from '#lib/data/imports/runs.ts';
import { UPLOAD_DIR_VARIABLE } from '#lib/data/imports/uploads.ts';
import { importKeys } from '#lib/data/keys.ts';
import { getItem } from '#lib/data/store/client.ts';
import { listEvents } from '#lib/events/feed.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { PAUSED_LIMIT_MS, PAUSED_TOO_LONG } from '#lib/imports/engine.ts';
import { startImport } from '#lib/imports/jobs.ts';
import { LEASE_MS, runImports } from '#lib/imports/runner.ts';
import { environmentSealer } from '#lib/imports/sealers.ts';
import { nowMillis } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { type ManualClock, useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';

/**
 * `admin import` (operations.md, "Imports"): the job the API starts, run by the command to its end with its
 * progress written as lines when not on a terminal; Ctrl-C pauses it at a checkpoint and the same command resumes
 * it, each record once; secrets only from a file.
 */
const EXAMPLE = new URL('../../examples/import.ndjson', import.meta.url).pathname;
const created = (n: number) => ({ source: n, created: n, updated: 0, unchanged: 0, failed: 0 });
let dir: string;
const clockNow = useManualClock({ lazy: true });

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-admin-import-'));
  process.env[UPLOAD_DIR_VARIABLE] = dir;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/**
 * Runs `work`, moving the clock a second at a time while something waits on it (the command's wait after a stall,
 * its heartbeat) and giving the work real turns between (it reads files, which no settle sees): bound by real time,
 * not by the clock's, which may run far ahead of a step that is reading. Fails after two minutes without an end.
 */
async function driven<T>(clock: ManualClock, work: Promise<T>): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  work.then(
    (value) => {
      outcome = { value };
    },
    (error: unknown) => {
      outcome = { error };
    },
  );
  const deadline = Date.now() + 120_000;
  while (!outcome && Date.now() < deadline) {
    if (clock.waiting > 0) await clock.advance(1_000);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (outcome && 'value' in outcome) return outcome.value;
  throw outcome ? (outcome as { error: unknown }).error : new Error('not ended within two minutes');
}

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
    // Due again only when 7 days are up (a runner then cancels it: the test above).
    const paused = await getItem(importKeys.job(account.accountId, first.import.id));
    expect(paused?.gsi2sk).toEqual(
      importKeys.due(account.accountId, first.import.id, Number(paused?.pausedAt) + PAUSED_LIMIT_MS).gsi2sk,
    );
    expect(first.import.progress.done).toBeLessThan(4);
    const again = await runImportCommand(account.accountId, ['--file', EXAMPLE], {
      progress: lines().progress,
      interrupted: () => false,
    });
    expect(again.import.id).toBe(first.import.id);
    expect(again.import).toMatchObject({ status: 'completed', progress: { done: 4, total: 4 } });
    expect(again.import.counts).toMatchObject({ tickets: created(4), agents: created(2), teams: created(2) });
  });

  it('Ctrl-C before the first step pauses the job too: no runner takes it meanwhile', async () => {
    const account = await createTestAccount();
    const first = await runImportCommand(account.accountId, ['--file', EXAMPLE], {
      progress: lines().progress,
      interrupted: () => true,
    });
    expect(first.import).toMatchObject({ status: 'paused', progress: { done: 0 } });
    const again = await runImportCommand(account.accountId, ['--file', EXAMPLE], {
      progress: lines().progress,
      interrupted: () => false,
    });
    expect(again.import).toMatchObject({ id: first.import.id, status: 'completed', progress: { done: 4 } });
  });

  it('waits out a store stall (a 503 in the middle of a step) and goes on from the checkpoint, every ticket once', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    // The first commit after the first source-key lookup (a person's, in a step) is lost before it reaches the
    // store: the step throws ServiceUnavailable.
    const fault = { operation: 'TransactWriteItems', after: 'BatchGetItem', mode: 'lost-request' } as const;
    const { result } = await withFault(fault, () =>
      driven(
        clock,
        runImportCommand(account.accountId, ['--file', EXAMPLE], {
          progress: lines().progress,
          interrupted: () => false,
        }),
      ),
    );
    expect(result.import).toMatchObject({ status: 'completed', progress: { done: 4, total: 4 } });
    expect(result.import.counts.tickets).toMatchObject({ source: 4, failed: 0 });
    expect(result.import.counts.tickets.created + result.import.counts.tickets.unchanged).toBe(4);
  });

  it('cancels a job paused 7 days (the command not run again): credentials deleted, the reason stated, no event', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    // What Ctrl-C does at a checkpoint (below): the job paused, due again only when the 7 days are up.
    const body = { source: 'zendesk', subdomain: 'acme', email: 'a@acme.test', api_token: 'zd-token-7days' };
    const { job: started } = await startImport(
      account.accountId,
      body,
      'http://127.0.0.1',
      undefined,
      environmentSealer(),
    );
    const id = started.id;
    const claimed = await claimJob(account.accountId, id, 'admin-1', nowMillis() + LEASE_MS, nowMillis());
    if (!claimed) throw new Error('the new job was not claimed');
    await pauseJob(claimed, 'admin-1', nowMillis() + OPERATOR_PAUSE_MS, nowMillis());
    const runner = () => runImports(Number.POSITIVE_INFINITY, { owner: 'npm-start', untilDrained: true });
    await clock.advance(PAUSED_LIMIT_MS - 60_000);
    await runner();
    expect(await getJob(account.accountId, id)).toMatchObject({ status: 'paused', failure: null });
    expect((await getItem(importKeys.job(account.accountId, id)))?.cred).toEqual(expect.any(String));
    await clock.advance(60_000);
    await runner();
    const job = await getJob(account.accountId, id);
    expect(job).toMatchObject({ status: 'cancelled', failure: PAUSED_TOO_LONG, cred: null, pausedAt: null });
    expect(job?.completedAt).not.toBeNull();
    expect(await getItem(importKeys.job(account.accountId, id))).not.toHaveProperty('cred');
    expect(await activeImport(account.accountId)).toBeUndefined();
    // A cancel writes no event (import.completed and import.failed name the status they report).
    const feed = await listEvents(account.accountId, { limit: 100, types: ['import.*'] });
    expect(feed.data).toEqual([]);
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
