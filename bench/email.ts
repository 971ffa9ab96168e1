import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { folderMailStore, startMailServer } from '#infra/local/mail.ts';
import { newInboundId, receiveMail } from '#lib/email/receive.ts';
import { formatTimestamp } from '#lib/time.ts';
import { figuresOf } from '#test/support/dynamo-figures.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { percentile, round } from './lib/stats.ts';

/**
 * `npm run bench -- --email [--quick]`: the inbound mail path (docs/email.md). (1) What one mail costs the store:
 * a new mail (a ticket) and a reply (a message), processed straight by receiveMail from a kept raw file: round
 * trips, items read and written, write units. (2) Small text mails sent by nodemailer over 4 SMTP connections to
 * npm start's SMTP server, processed by the one handler: mails processed per second, and the time from each
 * mail's 250 to its log entry (its ticket written) at p50/p99. To bench/runs/results-email.json.
 */
export async function runEmailOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-email.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => {
      const domain = `bench${randomBytes(3).toString('hex')}.test`;
      const address = `support@${domain}`;
      await benchAccount(`bench-email-${randomBytes(3).toString('hex')}`, {
        agents: [{ email: 'agent@email.bench', name: 'Agent' }],
        email: { addresses: [address] },
      });
      const dir = await mkdtemp(join(tmpdir(), 'deskpipe-bench-mail-'));
      try {
        // (1) Store cost per mail.
        const store = folderMailStore(dir);
        await mkdir(join(dir, 'raw'), { recursive: true });
        const kept = async (raw: string) => {
          const inboundId = newInboundId();
          const rawKey = `raw/${inboundId}.eml`;
          await writeFile(join(dir, rawKey), raw);
          return {
            inboundId,
            rawKey,
            receivedAt: formatTimestamp(Date.now() * 1000),
            mailFrom: 'rita@customer.bench',
            recipients: [address],
          };
        };
        const first = `<first-${randomBytes(4).toString('hex')}@customer.bench>`;
        const mailText = (id: string, extra = '') =>
          `From: Rita <rita@customer.bench>\r\nTo: ${address}\r\nSubject: Bench mail\r\nMessage-ID: ${id}\r\n${extra}\r\n${'Text of the mail. '.repeat(10)}\r\n`;
        const newMail = await kept(mailText(first));
        const newFigures = await figuresOf(() => receiveMail(newMail, store));
        const reply = await kept(
          mailText(`<r-${randomBytes(4).toString('hex')}@customer.bench>`, `In-Reply-To: ${first}\r\n`),
        );
        const replyFigures = await figuresOf(() => receiveMail(reply, store));
        const duplicateFigures = await figuresOf(async () =>
          receiveMail({ ...reply, inboundId: newInboundId() }, store),
        );
        const perMail = Object.fromEntries(
          (
            [
              ['newTicket', newFigures],
              ['reply', replyFigures],
              ['duplicate', duplicateFigures],
            ] as const
          ).map(([name, f]) => [
            name,
            {
              roundTrips: f.roundTrips,
              itemsRead: f.itemsRead,
              itemsWritten: f.itemsWritten,
              writeUnits: round(f.writeUnits, 1),
            },
          ]),
        );
        log(`  per mail: ${JSON.stringify(perMail)}`);

        // (2) Throughput and 250-to-message latency through SMTP.
        const count = options.quick ? 100 : 400;
        const acceptedAt = new Map<string, number>();
        const doneAt = new Map<string, number>();
        const server = await startMailServer({
          port: 0,
          dir: join(dir, 'smtp'),
          onProcessed: (_mail, records) => {
            for (const r of records) if (r.subject) doneAt.set(r.subject, performance.now());
          },
        });
        const started = performance.now();
        let next = 0;
        const lane = async () => {
          const transport = nodemailer.createTransport({
            host: '127.0.0.1',
            port: server.port,
            secure: false,
            ignoreTLS: true,
            pool: true,
            maxConnections: 1,
          });
          while (next < count) {
            const subject = `Bench ${next++}`;
            await transport.sendMail({
              from: 'rita@customer.bench',
              to: address,
              subject,
              text: 'Help, please.',
            });
            acceptedAt.set(subject, performance.now());
          }
          transport.close();
        };
        await Promise.all([lane(), lane(), lane(), lane()]);
        await server.idle();
        const finished = Math.max(...doneAt.values());
        await server.stop();
        const latencies = [...acceptedAt]
          .map(([s, t]) => (doneAt.get(s) ?? Number.NaN) - t)
          .sort((a, b) => a - b);
        const smtp = {
          mails: count,
          processed: doneAt.size,
          mailsPerSecond: round(count / ((finished - started) / 1000), 1),
          acceptedToMessageMs: {
            p50: round(percentile(latencies, 50), 1),
            p99: round(percentile(latencies, 99), 1),
          },
        };
        log(`  smtp: ${JSON.stringify(smtp)}`);
        return { perMail, smtp };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  });
}
