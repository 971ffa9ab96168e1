import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { folderMailStore, startMailServer } from '#infra/local/mail.ts';
import { outboxPass, runOutbox } from '#lib/email/outbox.ts';
import { newInboundId, receiveMail } from '#lib/email/receive.ts';
import { smtpSender } from '#lib/email/senders.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import { postMessage } from '#lib/tickets/messages/post.ts';
import { figuresOf } from '#test/support/dynamo-figures.ts';
import { keepRaw } from '#test/support/kept-mail.ts';
import { startSmtpSink } from '#test/support/smtp-sink.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { percentile, round } from './lib/stats.ts';

/**
 * `npm run bench -- --email [--quick]`: the inbound mail path (docs/email.md). (1) What one mail costs the store:
 * a new mail (a ticket) and a reply (a message), processed straight by receiveMail from a kept raw file: round
 * trips, items read and written, write units. (2) Small text mails sent by nodemailer over 4 SMTP connections to
 * npm start's SMTP server, processed by the one handler: mails processed per second, and the time from each
 * mail's 250 to its log entry (its ticket written) at p50/p99. (3) Sending: agents' replies posted (the library's
 * postMessage, 4 at a time) while the outbox runner runs as npm start runs it (a pass every 250 ms) to a real SMTP
 * relay on 127.0.0.1, half paced (one every 100 ms) and half in a burst (4 posters at once): the time from each
 * reply's commit to the relay's receipt of its mail at p50/p99, and what one
 * sent mail costs the store (its pass: claim, reads, record). To bench/runs/results-email.json.
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
      const account = await benchAccount(`bench-email-${randomBytes(3).toString('hex')}`, {
        agents: [{ email: 'agent@email.bench', name: 'Agent' }],
        email: { addresses: [address] },
      });
      const dir = await mkdtemp(join(tmpdir(), 'deskpipe-bench-mail-'));
      try {
        // (1) Store cost per mail.
        const store = folderMailStore(dir);
        await mkdir(join(dir, 'raw'), { recursive: true });
        const kept = (raw: string) => keepRaw(dir, raw, { mailFrom: 'rita@customer.bench', address });
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
        // A reply copying two colleagues: two person references in its commit (docs/capacity.md).
        const copying = await kept(
          mailText(
            `<c-${randomBytes(4).toString('hex')}@customer.bench>`,
            `In-Reply-To: ${first}\r\nCc: ann@customer.bench, bob@customer.bench\r\n`,
          ),
        );
        const copyingFigures = await figuresOf(() => receiveMail(copying, store));
        // An automatic mail that opens no ticket: its log entry is its sender's person reference.
        const automatic = await kept(
          mailText(
            `<a-${randomBytes(4).toString('hex')}@customer.bench>`,
            'Auto-Submitted: auto-replied\r\n',
          ),
        );
        const automaticFigures = await figuresOf(() => receiveMail(automatic, store));
        const perMail = Object.fromEntries(
          (
            [
              ['newTicket', newFigures],
              ['reply', replyFigures],
              ['duplicate', duplicateFigures],
              ['replyCopyingTwo', copyingFigures],
              ['automaticNoTicket', automaticFigures],
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
        const sending = await benchSending(account.accountId, options.quick ? 50 : 200);
        log(`  sending: ${JSON.stringify(sending)}`);
        return { perMail, smtp, sending };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  });
}

/**
 * (3) Agent reply to relay delivery: `count` replies on one mail ticket each (so they do not wait for each other's
 * ticket version), posted 4 at a time while one outbox runner polls every 250 ms, as npm start runs it.
 */
async function benchSending(accountId: string, count: number) {
  const sink = await startSmtpSink();
  const sender = smtpSender(sink.url);
  try {
    const tickets: string[] = [];
    const customer = (i: number) => `c${i}@customer.bench`;
    for (let i = 0; i < count + 1; i++) {
      const created = await createTicket(accountId, {
        subject: `Bench ticket ${i}`,
        description: 'Help.',
        requester_email: customer(i),
      });
      tickets.push(created.uuid);
    }
    // What one sent mail costs the store: its reply's commit (beside one not e-mailed: a no-reply requester),
    // then the one pass that sends it.
    const quiet = await createTicket(accountId, {
      subject: 'Not mailed',
      description: 'Help.',
      requester_email: 'no-reply@customer.bench',
    });
    const unmailedReply = await figuresOf(() =>
      postMessage(accountId, quiet.uuid, { body: 'Cost.', author: 'agent', agent_id: 1 }),
    );
    const mailedReply = await figuresOf(() =>
      postMessage(accountId, tickets[count] as string, { body: 'Cost.', author: 'agent', agent_id: 1 }),
    );
    const perSentMail = await figuresOf(() => outboxPass({ sender }));

    let stopped = false;
    const runner = runOutbox(Number.POSITIVE_INFINITY, { sender, stopped: () => stopped });
    // Paced: one reply every 100 ms, each alone in the outbox (the path itself: the poll, claim, reads, SMTP).
    // Burst: 4 posters as fast as the store takes them (the runner's queue grows while it catches up).
    const half = Math.floor(count / 2);
    const paced = await replyToRelay(sink, accountId, tickets.slice(0, half), 1, 100);
    const burst = await replyToRelay(sink, accountId, tickets.slice(half, count), 4, 0);
    stopped = true;
    await runner;
    return {
      replies: count,
      paced,
      burst,
      ...Object.fromEntries(
        (
          [
            ['unmailedReply', unmailedReply],
            ['mailedReply', mailedReply],
            ['perSentMail', perSentMail],
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
      ),
    };
  } finally {
    sender.close();
    await sink.stop();
  }
}

/** Replies on `tickets` by `lanes` posters (each waiting `gapMs` after a post): commit to relay receipt. */
async function replyToRelay(
  sink: Awaited<ReturnType<typeof startSmtpSink>>,
  accountId: string,
  tickets: string[],
  lanes: number,
  gapMs: number,
) {
  const postedAt = new Map<string, number>();
  let next = 0;
  const lane = async () => {
    while (next < tickets.length) {
      const i = next++;
      const posted = await postMessage(accountId, tickets[i] as string, {
        body: `Reply ${i}`,
        author: 'agent',
        agent_id: 1,
      });
      postedAt.set(String(posted.message.email?.message_id), performance.now());
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const deadline = Date.now() + 60_000;
  const arrivedAt = new Map<string, number>();
  while (arrivedAt.size < postedAt.size && Date.now() < deadline) {
    for (const mail of sink.mails) {
      const id = mail.header('message-id')?.slice(1, -1) ?? '';
      if (postedAt.has(id) && !arrivedAt.has(id)) arrivedAt.set(id, mail.receivedAt);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const latencies = [...postedAt]
    .map(([id, t]) => (arrivedAt.get(id) ?? Number.NaN) - t)
    .sort((a, b) => a - b);
  return {
    replies: tickets.length,
    delivered: arrivedAt.size,
    replyToRelayMs: { p50: round(percentile(latencies, 50), 1), p99: round(percentile(latencies, 99), 1) },
  };
}
