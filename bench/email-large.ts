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
export async function runEmailLargeOnly(options: { quick: boolean; text?: boolean }) {
  if (options.text) return runEmailTextOnly();
  const { service, root, pid, before, inbound } = await startMeasured('large');
  try {
    const address = 'support@demo.deskpipe.test';
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

/** `npm start` on a data folder of its own, its node process's pid and memory at rest, and its inbound count. */
async function startMeasured(name: string) {
  const root = await mkdtemp(join(tmpdir(), `deskpipe-bench-${name}-`));
  const service = await startService(
    {
      DYNAMODB_DATA_DIR: join(root, 'dynamodb'),
      MAIL_DATA_DIR: join(root, 'mail'),
      TABLE_NAME: `deskpipe-bench-${name}`,
      LOG_LEVEL: 'silent',
    },
    ['--in-memory'],
  );
  const pid = servicePid(service.child.pid ?? 0);
  const before = memoryOf(pid);
  log(`  service pid ${pid}: before ${JSON.stringify(before)}`);
  /** How many mails the demo account's inbound log holds. */
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
  return { service, root, pid, before, inbound };
}

/**
 * `npm run bench -- --email-large --text`: text mails of ~25 MB (a 25,000,000-character text/plain body, no
 * attachment) through a fresh `npm start`: one alone, then four at once over four connections. The service's
 * peak resident memory (VmHWM) after each, and the time until each batch is logged. The goal (decisions.md,
 * "Bounded"): a 25 MiB text mail costs no more than a 25 MiB attachment, under 512 MB. To
 * bench/runs/results-email-text.json (docs/email.md quotes it).
 */
async function runEmailTextOnly() {
  const { service, root, pid, before, inbound } = await startMeasured('text');
  try {
    // 67 characters and a line break, 367,648 times: 25 MB of text, 25.4 MB on the wire (CRLF), under 25 MiB.
    const line = 'Text of a very long mail, line after line, as a log pasted in full.\n';
    const text = line.repeat(Math.ceil(25_000_000 / line.length)).slice(0, 25_000_000);
    const send = async (mails: number) => {
      const seen = await inbound();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: mails }, async (_, n) => {
          const transport = nodemailer.createTransport({
            host: '127.0.0.1',
            port: service.smtpPort,
            secure: false,
            ignoreTLS: true,
          });
          await transport.sendMail({
            from: `sender${n}@customer.bench`,
            to: 'support@demo.deskpipe.test',
            subject: `Text ${mails} ${n}`,
            text,
          });
          transport.close();
        }),
      );
      const accepted = performance.now();
      // A keep-alive connection the busy service dropped (ECONNRESET) is asked again at the next poll.
      await waitFor(async () => (await inbound().catch(() => 0)) >= seen + mails, {
        timeout: 600_000,
        interval: 250,
        label: `${mails} text mails processed`,
      });
      const done = performance.now();
      return {
        mails,
        acceptedS: round((accepted - started) / 1000, 2),
        processedS: round((done - started) / 1000, 2),
        memory: memoryOf(pid),
      };
    };
    const one = await send(1);
    log(`  one text mail of 25 MB: ${JSON.stringify(one)}`);
    const four = await send(4);
    log(`  four text mails of 25 MB at once: ${JSON.stringify(four)}`);
    const results = { startedAt: new Date().toISOString(), before, one, four };
    mkdirSync(RUNS, { recursive: true });
    writeFileSync(join(RUNS, 'results-email-text.json'), `${JSON.stringify(results, null, 2)}\n`);
    log(`  peak RSS of the service: ${four.memory.peakMB} MB (goal: under 512 MB)`);
  } catch (error) {
    log(`  the service's last output:\n${service.stdout().slice(-2000)}\n${service.stderr().slice(-3000)}`);
    log(`  exit: ${service.child.exitCode} ${service.child.signalCode}`);
    throw error;
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
