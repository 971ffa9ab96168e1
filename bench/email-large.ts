import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { startService } from '#test/support/service.ts';
import { waitFor } from '#test/support/wait.ts';
import { log } from './lib/measure.ts';
import { RUNS } from './lib/part.ts';
import { round } from './lib/stats.ts';

/**
 * `npm run bench -- --email-large [--quick]`: large mails through `npm start` as a user runs it (its own embedded
 * store, its SMTP server, the one inbound handler), measured from outside its process. (1) Ten mails of ~25 MB on
 * the wire (an 18 MiB attachment, base64) arriving at once over ten SMTP connections: the service process's peak
 * resident memory (VmHWM of its node process, /proc) before and after, and the time until all ten are tickets.
 * (2) Mails of ~5 MB (a 3.6 MiB attachment) over 4 connections: mails processed per second. The goal
 * (issue 29): peak RSS under 512 MB, since a mail is streamed to storage, never buffered whole. To
 * bench/runs/results-email-large.json (docs/email.md quotes it).
 */
export async function runEmailLargeOnly(options: { quick: boolean }) {
  const root = await mkdtemp(join(tmpdir(), 'deskpipe-bench-large-'));
  const service = await startService(
    {
      DYNAMODB_DATA_DIR: join(root, 'dynamodb'),
      MAIL_DATA_DIR: join(root, 'mail'),
      TABLE_NAME: 'deskpipe-bench-large',
      LOG_LEVEL: 'silent',
    },
    ['--in-memory'],
  );
  try {
    const pid = servicePid(service.child.pid ?? 0);
    const address = 'support@demo.deskpipe.test';
    const before = memoryOf(pid);
    log(`  service pid ${pid}: before ${JSON.stringify(before)}`);

    const inbound = async () => {
      let count = 0;
      let after: string | undefined;
      for (;;) {
        const r = await fetch(
          `${service.baseUrl}/api/email/inbound?limit=100${after ? `&after=${after}` : ''}`,
          { headers: { Authorization: `Bearer ${service.apiKey}` } },
        );
        const body = (await r.json()) as { data: unknown[]; next_cursor: string | null };
        count += body.data.length;
        if (!body.next_cursor) return count;
        after = body.next_cursor;
      }
    };
    const send = async (mails: number, lanes: number, attachmentBytes: number, tag: string) => {
      const attachment = randomBytes(attachmentBytes);
      let next = 0;
      const lane = async () => {
        const transport = nodemailer.createTransport({
          host: '127.0.0.1',
          port: service.smtpPort,
          secure: false,
          ignoreTLS: true,
        });
        while (next < mails) {
          const n = next++;
          await transport.sendMail({
            from: `sender${n}@customer.bench`,
            to: address,
            subject: `${tag} ${n}`,
            text: 'The file is attached.',
            attachments: [{ filename: `file-${n}.bin`, content: attachment }],
          });
        }
        transport.close();
      };
      const seen = await inbound();
      const started = performance.now();
      await Promise.all(Array.from({ length: lanes }, lane));
      const accepted = performance.now();
      await waitFor(async () => (await inbound()) >= seen + mails, {
        timeout: 600_000,
        interval: 250,
        label: `${mails} ${tag} mails processed`,
      });
      const done = performance.now();
      return {
        acceptedS: round((accepted - started) / 1000, 2),
        processedS: round((done - started) / 1000, 2),
      };
    };

    const bigCount = options.quick ? 4 : 10;
    const big = await send(bigCount, bigCount, 18 * 1024 * 1024, 'Large');
    const afterBig = memoryOf(pid);
    const large = { mails: bigCount, wireMB: 25, ...big, memory: afterBig };
    log(`  ${bigCount} mails of ~25 MB at once: ${JSON.stringify(large)}`);

    const mediumCount = options.quick ? 8 : 20;
    const medium = await send(mediumCount, 4, Math.round(3.6 * 1024 * 1024), 'Medium');
    const mediumResult = {
      mails: mediumCount,
      wireMB: 5,
      ...medium,
      mailsPerSecond: round(mediumCount / medium.processedS, 2),
      memory: memoryOf(pid),
    };
    log(`  ${mediumCount} mails of ~5 MB over 4 connections: ${JSON.stringify(mediumResult)}`);

    const results = {
      startedAt: new Date().toISOString(),
      mode: options.quick ? 'quick' : 'full',
      before,
      large,
      medium: mediumResult,
    };
    mkdirSync(RUNS, { recursive: true });
    writeFileSync(join(RUNS, 'results-email-large.json'), `${JSON.stringify(results, null, 2)}\n`);
    log(`  peak RSS of the service: ${mediumResult.memory.peakMB} MB (goal: under 512 MB)`);
  } finally {
    await service.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The node process that runs the service: the tsx wrapper's child (not the Java store, which is its child). */
function servicePid(wrapper: number): number {
  const children = execFileSync('pgrep', ['-P', String(wrapper)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number);
  const node = children.find((pid) => !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('java'));
  if (!node) throw new Error(`no service process under ${wrapper}`);
  return node;
}

/** The process's resident memory now and its peak since it started (Linux /proc). */
function memoryOf(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMB: round(kb('VmRSS') / 1024, 1), peakMB: round(kb('VmHWM') / 1024, 1) };
}
