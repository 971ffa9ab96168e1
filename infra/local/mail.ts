import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import { folderMailStore, queueRecordName } from '#lib/data/mail-store.ts';
import { localAuthservId } from '#lib/email/authentication.ts';
import { keepCopies } from '#lib/email/copies.ts';
import {
  accountsOf,
  MAX_MAIL_BYTES,
  type MailStore,
  newInboundId,
  type ReceivedMail,
} from '#lib/email/receive.ts';
import { formatTimestamp, nowMillis } from '#lib/time.ts';
import { MailQueue } from './mail-queue.ts';

/**
 * `npm start`'s inbound mail (docs/email.md, "One code path, two worlds"): an SMTP server on 127.0.0.1
 * that says 250 only once each account the mail is for has its own copy of the raw message on disk (fsynced,
 * with its envelope beside it in `pending/<inbound id>.<account>.json`), then hands each to the one inbound handler
 * (lib/email/receive.ts), as SES + S3 + the inbound function do deployed. Raw mail is kept in a folder (`mail/`),
 * never in the table: a mail may be 25 MiB, an item 400 KB. A mail whose processing fails (the store stalled) stays
 * pending and is tried again later, at the back of the queue, its slot given to the next mail meanwhile; a mail that
 * can never be stored is not a failure (the handler logs it `rejected`). A restart processes everything still
 * pending, and the Message-ID claim makes a mail
 * processed twice one message.
 */

/** The contract's size limit (decisions.md): 25 MiB. Over it, 552, and nothing past it is written. */
export { MAX_MAIL_BYTES };
/** Recipients of one message at most (operations.md); the next RCPT is answered 452 (RFC 5321 4.5.3.1.10). */
export const MAX_RECIPIENTS = 50;

/**
 * A restart processes again the mail processed in this window before it: DynamoDB Local can lose a transaction
 * it acknowledged just before a SIGKILL (test/system/store-death.test.ts); the inbound log entry and the
 * Message-ID claim make processing a mail again change nothing when nothing was lost.
 */
const REPROCESS_WINDOW_MS = 60_000;

export interface MailServerOptions {
  port: number;
  /** Where raw mail, attachments and the pending queue are kept. */
  dir: string;
  host?: string;
  /**
   * The authserv-id of the `Authentication-Results` header believed for a mail's SPF, DKIM and DMARC, as a
   * receiving edge relay adds it (default `SMTP_AUTHSERV_ID`, else `deskpipe.local`; operations.md).
   */
  authservId?: string;
  /** Where kept mail is read and attachments written: the folder store of `dir` unless given (tests fail it). */
  store?: MailStore;
  /** Each processed mail's log entries (tests and the bench wait on these). */
  onProcessed?: (mail: ReceivedMail, records: InboundRecord[]) => void;
}

export interface MailServer {
  port: number;
  /** Resolves once nothing is pending or being processed. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/** The folder store (lib/data/mail-store.ts): raw mail in `raw/<id>.eml`, attachments in `attachments/<id>/<att>`. */
export { folderMailStore };

const smtpError = (code: number, message: string) =>
  Object.assign(new Error(message), { responseCode: code });

export async function startMailServer(options: MailServerOptions): Promise<MailServer> {
  const { dir } = options;
  await Promise.all(
    ['raw', 'pending', 'done', 'incoming'].map((d) => mkdir(join(dir, d), { recursive: true })),
  );
  const store = options.store ?? folderMailStore(dir);
  const authservId = options.authservId ?? localAuthservId();
  const queue = new MailQueue(dir, store, options.onProcessed);
  const server = smtpServer(
    (stream, session) => keepMail({ dir, store, authservId }, stream, session),
    (name) => queue.enqueue(name),
  );
  server.on('error', (error) => console.error(`SMTP server: ${error.message}`));

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  await recoverKeptMail(dir, queue);

  return {
    port: (server.server.address() as AddressInfo).port,
    idle: () => queue.idle(),
    async stop() {
      queue.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What keeping a mail needs: the folder, the store its copies go to, the authserv-id believed. */
interface Keeping {
  dir: string;
  store: MailStore;
  authservId: string;
}

/**
 * A mail received: its raw bytes in incoming/, then each account's copy with its envelope in pending/, before the
 * 250; answers its inbound id and the names it queues.
 */
async function keepMail(
  { dir, store, authservId }: Keeping,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
): Promise<{ id: string; queued: string[] }> {
  const receivedMs = nowMillis();
  const id = newInboundId(receivedMs);
  const rawKey = `incoming/${id}.eml`;
  const incoming = join(dir, rawKey);
  const trace =
    `Received: from ${session.clientHostname || 'unknown'} ([${session.remoteAddress}])\r\n` +
    `\tby deskpipe (smtp-server) with SMTP id ${id};\r\n\t${new Date(receivedMs).toUTCString()}\r\n`;
  // The raw bytes, the trace header first, flushed to disk before the 250 (`flush`: fsync before close). Past
  // the limit nothing more is written: the rest is read (the answer comes after the message's end) and dropped.
  await pipeline(
    (async function* () {
      yield Buffer.from(trace);
      for await (const chunk of stream as Readable) if (!stream.sizeExceeded) yield chunk as Buffer;
    })(),
    createWriteStream(incoming, { flush: true }),
  );
  if (stream.sizeExceeded) {
    await rm(incoming, { force: true });
    throw smtpError(552, `Message exceeds the limit of ${MAX_MAIL_BYTES} bytes`);
  }
  const mail: ReceivedMail = {
    inboundId: id,
    rawKey,
    receivedAt: formatTimestamp(receivedMs * 1000),
    mailFrom: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address.toLowerCase(),
    recipients: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
    authservId,
  };
  // Each account's copy (lib/email/copies.ts: the incoming file goes once they are made), each with its record.
  let copies = new Map<string, ReceivedMail>();
  const pendingOf = (accountId: string) => join(dir, 'pending', queueRecordName(id, accountId));
  try {
    copies = await keepCopies(mail, await accountsOf(mail.recipients), store);
    for (const [accountId, copy] of copies) {
      const fh = await open(`${pendingOf(accountId)}.tmp`, 'w');
      await fh.writeFile(JSON.stringify(copy));
      await fh.sync();
      await fh.close();
      await rename(`${pendingOf(accountId)}.tmp`, pendingOf(accountId));
    }
  } catch (error) {
    // No 250: nothing of this attempt stays (the sender sends the mail again).
    for (const [accountId, copy] of copies) {
      await rm(pendingOf(accountId), { force: true });
      await store.remove(copy.rawKey);
    }
    throw error;
  } finally {
    await rm(incoming, { force: true });
  }
  const queued = [...copies.keys()].map((accountId) =>
    queueRecordName(id, accountId).slice(0, -'.json'.length),
  );
  return { id, queued };
}

/** The SMTP server: RCPT only for an address an account holds, DATA answered once the mail is kept. */
function smtpServer(
  keep: (
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
  ) => Promise<{ id: string; queued: string[] }>,
  enqueue: (name: string) => void,
): SMTPServer {
  return new SMTPServer({
    name: 'deskpipe.local',
    banner: 'deskpipe inbound mail',
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    disableReverseLookup: true,
    size: MAX_MAIL_BYTES,
    maxRecipients: MAX_RECIPIENTS,
    logger: false,
    onRcptTo(address, _session, callback) {
      accountsOf([address.address]).then(
        (accounts) =>
          accounts.size > 0
            ? callback()
            : callback(smtpError(550, `5.1.1 <${address.address}>: no such recipient here`)),
        // The store unreachable: a temporary refusal, so the sender tries again later.
        () => callback(smtpError(451, '4.3.0 Temporary failure, try again later')),
      );
    },
    onData(stream, session, callback) {
      keep(stream, session).then(
        ({ id, queued }) => {
          callback(null, `2.0.0 Ok: queued as ${id}`);
          for (const name of queued) enqueue(name);
        },
        (error: unknown) => {
          (stream as Readable).resume();
          callback(
            (error as { responseCode?: number }).responseCode
              ? (error as Error)
              : smtpError(451, '4.3.0 Could not keep the message, try again later'),
          );
        },
      );
    },
  });
}

/**
 * At start: mail cut short by a crash was never acknowledged (no 250), so its partial file goes; mail processed just
 * before a crash (its commit perhaps lost with the store) goes back to pending, older ones are forgotten. Then every
 * mail kept and not yet processed is queued, oldest first.
 */
async function recoverKeptMail(dir: string, queue: MailQueue): Promise<void> {
  await rm(join(dir, 'incoming'), { recursive: true, force: true });
  await mkdir(join(dir, 'incoming'));
  const now = nowMillis();
  for (const name of await readdir(join(dir, 'done'))) {
    const ms = Number(name.slice(3, 16));
    if (now - ms < REPROCESS_WINDOW_MS) await rename(join(dir, 'done', name), join(dir, 'pending', name));
    else await rm(join(dir, 'done', name), { force: true });
  }
  for (const name of (await readdir(join(dir, 'pending'))).sort()) {
    if (name.endsWith('.json')) queue.enqueue(name.slice(0, -'.json'.length));
  }
}
