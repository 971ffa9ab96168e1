import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { activeImport } from '#lib/data/imports/active.ts';
import { markUploaded, resumePaused } from '#lib/data/imports/asks.ts';
import { ENDED, getJob, type ImportJob } from '#lib/data/imports/jobs.ts';
import { claimJob, pauseJob, releaseJob } from '#lib/data/imports/runs.ts';
import { putLocalUpload } from '#lib/data/imports/uploads.ts';
import { ServiceUnavailable } from '#lib/errors.ts';
import { PAUSED_LIMIT_MS, runImportStep } from '#lib/imports/engine.ts';
import { startImport } from '#lib/imports/jobs.ts';
import { presentImport } from '#lib/imports/present.ts';
import { readerFor } from '#lib/imports/readers.ts';
import type { ImportSourceReader } from '#lib/imports/records.ts';
import { LEASE_MS, withHeartbeat } from '#lib/imports/runner.ts';
import { environmentSealer } from '#lib/imports/sealers.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { type ImportProgress, importProgress } from './import-progress.ts';

/**
 * `admin import SLUG …` (operations.md, "Imports"): the job the API starts, run here until it ends, its progress on
 * stderr. Secrets come from a file (or stdin, `-`), never argv. Ctrl-C (`interrupted`) pauses the job at its next
 * checkpoint; the same command run again resumes it. When another runner holds the job (`npm start`'s), this one
 * shows its progress until it ends.
 */
export interface ImportCommandIo {
  progress: { write(text: string): unknown; isTTY?: boolean };
  interrupted: () => boolean;
  /** Reads a secret file (stdin for `-`). */
  readSecret?: (file: string) => string;
}

export class ImportUsage extends Error {}

/**
 * How long a job paused by Ctrl-C waits for the command to be run again: then a runner takes it up and cancels it
 * (PAUSED_LIMIT_MS, docs/imports.md "The engine").
 */
export const OPERATOR_PAUSE_MS = PAUSED_LIMIT_MS;
const POLL_MS = 1_000;

const flag = (args: string[], name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};

/** The POST /api/imports body the arguments describe (secrets read from their files). */
export function importBody(args: string[], readSecret: (file: string) => string): Record<string, unknown> {
  const file = flag(args, '--file');
  const source = file ? 'ndjson' : flag(args, '--source');
  const common = {
    mode: args.includes('--validate') ? 'validate' : 'run',
    ...(flag(args, '--since') ? { since: flag(args, '--since') } : {}),
    ...(flag(args, '--rate-share') ? { rate_share: Number(flag(args, '--rate-share')) } : {}),
  };
  const secret = (name: string) => {
    const path = flag(args, name);
    if (!path) throw new ImportUsage(`${name} is needed (a secret is read from a file, never from argv)`);
    return readSecret(path).trim();
  };
  if (source === 'zendesk')
    return {
      source,
      subdomain: flag(args, '--subdomain'),
      email: flag(args, '--email'),
      api_token: secret('--token-file'),
      ...common,
    };
  if (source === 'freshdesk')
    return { source, domain: flag(args, '--domain'), api_key: secret('--key-file'), ...common };
  if (source === 'ndjson') {
    if (!file || !existsSync(file)) throw new ImportUsage(`no such file: ${file}`);
    return { source, ...common };
  }
  throw new ImportUsage('--source zendesk|freshdesk, or --file FILE');
}

const readSecretFile = (file: string) => readFileSync(file === '-' ? 0 : file, 'utf8');

/** Runs the import to its end (or to a pause by Ctrl-C): `{import}` as GET /api/imports/{id} answers it. */
export async function runImportCommand(accountId: string, args: string[], io: ImportCommandIo) {
  const body = importBody(args, io.readSecret ?? readSecretFile);
  const job = await startOrResume(accountId, body, flag(args, '--file'));
  const progress = importProgress(io.progress);
  try {
    return { import: presentImport(await runToEnd(job, progress, io.interrupted)) };
  } finally {
    progress.stop();
  }
}

/** A new job; or the account's job paused by an earlier Ctrl-C, of the same source, made due again. */
async function startOrResume(accountId: string, body: Record<string, unknown>, file: string | undefined) {
  const active = await activeImport(accountId);
  if (active?.status === 'paused' && active.source === body.source) {
    return (await resumePaused(active, nowMillis())) ?? active;
  }
  const { job } = await startImport(accountId, body, 'http://127.0.0.1', undefined, environmentSealer());
  if (file) {
    await putLocalUpload(accountId, job.id, createReadStream(file));
    return (await markUploaded(accountId, job.id, nowMillis())) ?? job;
  }
  return job;
}

/** How often, and how long, the command waits out a store that answers 503 (a stall) before it gives up. */
const STALL_WAIT_MS = 5_000;
const MAX_STALLS = 24;

/**
 * Steps the job while this command holds it; otherwise waits, showing it, until it ends. A store stall (503) is
 * waited out as the runner does (the job goes on from its checkpoint; the writes are keyed), up to two minutes.
 */
async function runToEnd(
  start: ImportJob,
  progress: ImportProgress,
  interrupted: () => boolean,
): Promise<ImportJob> {
  const run = {
    owner: `admin-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
    progress,
    interrupted,
  };
  const held: { reader?: ImportSourceReader } = {};
  for (let stalls = 0; ; ) {
    try {
      const ended = await holdAndStep(start, run, held);
      if (ended) return ended;
      stalls = 0;
    } catch (error) {
      if (!(error instanceof ServiceUnavailable) || ++stalls > MAX_STALLS) throw error;
      await sleep(STALL_WAIT_MS);
    }
  }
}

/** Claims the job and steps it while held: the job when it has ended or paused, undefined to look again. */
async function holdAndStep(
  start: ImportJob,
  run: { owner: string; progress: ImportProgress; interrupted: () => boolean },
  held: { reader?: ImportSourceReader },
): Promise<ImportJob | undefined> {
  const { owner, progress, interrupted } = run;
  const now = (await getJob(start.accountId, start.id)) ?? start;
  progress.show(presentImport(now));
  if (ENDED.includes(now.status)) return now;
  const claimed = await claimJob(now.accountId, now.id, owner, nowMillis() + LEASE_MS, nowMillis());
  if (!claimed) {
    // Held by a runner (npm start's): Ctrl-C leaves it to that runner.
    if (interrupted()) return now;
    await sleep(POLL_MS);
    return undefined;
  }
  // Ctrl-C before the first step: paused as at any checkpoint, not left queued for a runner to take.
  if (interrupted())
    return (await pauseJob(claimed, owner, nowMillis() + OPERATOR_PAUSE_MS, nowMillis())) ?? claimed;
  let job: ImportJob = claimed;
  held.reader ??= await readerFor(job, environmentSealer());
  const reader = held.reader;
  for (;;) {
    const stepping = job;
    // Within a long page of tickets the bar moves with each progress the engine saves (every 4 s).
    const onProgress = (moved: ImportJob['progress']) =>
      progress.show(presentImport({ ...stepping, status: 'running', progress: moved }));
    const step = await withHeartbeat(job, owner, () =>
      runImportStep(stepping, { owner, leaseMs: LEASE_MS, reader, onProgress }),
    ).catch(async (error: unknown) => {
      // A stall: the job due again at once, for this command's next look (else its lease holds it a minute).
      if (error instanceof ServiceUnavailable) await releaseJob(stepping, owner, nowMillis()).catch(() => {});
      throw error;
    });
    if (step.outcome !== 'more') return undefined;
    job = step.job;
    progress.show(presentImport(job));
    if (interrupted()) {
      // At this checkpoint: paused until the same command is run again.
      return (await pauseJob(job, owner, nowMillis() + OPERATOR_PAUSE_MS, nowMillis())) ?? job;
    }
  }
}
