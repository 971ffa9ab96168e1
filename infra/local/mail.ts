import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { InboundRecord } from '#lib/data/email.ts';
import { folderMailStore, queueRecordName } from '#lib/data/mail-store.ts';
import { localAuthservId } from '#lib/email/authentication.ts';
import { keepCopies } from '#lib/email/copies.ts';
import {
  accountsOf,
  MAX_MAIL_BYTES,
  type MailStore,
  newInboundId,
  type ReceivedMail,
  receiveMail,
} from '#lib/email/receive.ts';
import { formatTimestamp, nowMillis, sleep } from '#lib/time.ts';

/**
 * `npm start`'s inbound mail (docs/email.md, "Local and deployed side by side"): an SMTP server on 127.0.0.1
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

const RETRY_MS = [250, 500, 1_000, 2_000, 5_000];
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

  // The processing queue: the names (`<inbound id>.<account>`) of the copies whose envelope is in pending/; a
  // failed one waits out its backoff on the service's clock (`retrying`: its attempts so far, what ends its wait at
  // a stop) outside the queue, then goes to its back.
  const queue: string[] = [];
  const queued = new Set<string>();
  const retrying = new Map<string, { attempts: number; waiting?: AbortController }>();
  let running = 0;
  let stopped = false;
  const waiters: (() => void)[] = [];
  const CONCURRENCY = 4;
  const wakeIdle = () => {
    if (queue.length === 0 && running === 0 && retrying.size === 0) for (const w of waiters.splice(0)) w();
  };

  /**
   * One attempt at a kept mail: true once processed (its log written), its envelope unreadable (nothing to try
   * again) or gone (its ticket's purge took the copy and its records: lib/data/mail-store.ts, purgeMail); false
   * when the store failed.
   */
  const processOne = async (id: string): Promise<boolean> => {
    const pending = join(dir, 'pending', `${id}.json`);
    const read = () => readFile(pending, 'utf8').catch(() => undefined);
    const record = await read();
    if (record === undefined) return true;
    let mail: ReceivedMail;
    try {
      mail = JSON.parse(record) as ReceivedMail;
    } catch (error) {
      console.error(`mail ${id}: ${String(error)}`);
      return true;
    }
    try {
      const records = await receiveMail(mail, store);
      await rename(pending, join(dir, 'done', `${id}.json`)).catch(() => undefined);
      options.onProcessed?.(mail, records);
      return true;
    } catch (error) {
      if ((await read()) === undefined) return true;
      // The store stalled or failed: the mail stays pending and is tried again (never lost, never doubled).
      if (!retrying.has(id)) {
        console.error(`mail ${id}: ${error instanceof Error ? error.message : error} (retrying)`);
      }
      return false;
    }
  };
  const retryLater = (id: string) => {
    const attempts = (retrying.get(id)?.attempts ?? 0) + 1;
    const waiting = new AbortController();
    void sleep(RETRY_MS[Math.min(attempts - 1, RETRY_MS.length - 1)] as number, waiting.signal).then(() => {
      if (waiting.signal.aborted) return;
      retrying.set(id, { attempts });
      enqueue(id);
    });
    retrying.set(id, { attempts, waiting });
  };
  const pump = () => {
    while (!stopped && running < CONCURRENCY && queue.length > 0) {
      const id = queue.shift() as string;
      running += 1;
      processOne(id)
        .then((processed) => {
          queued.delete(id);
          if (processed) retrying.delete(id);
          else if (!stopped) retryLater(id);
        })
        .finally(() => {
          running -= 1;
          pump();
          wakeIdle();
        });
    }
  };
  const enqueue = (id: string) => {
    if (queued.has(id)) return;
    queued.add(id);
    queue.push(id);
    pump();
  };

  const keep = async (
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
  ): Promise<{ id: string; queued: string[] }> => {
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
  };

  const server = new SMTPServer({
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
  server.on('error', (error) => console.error(`SMTP server: ${error.message}`));

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  // Mail cut short by a crash was never acknowledged (no 250): its partial file goes.
  await rm(join(dir, 'incoming'), { recursive: true, force: true });
  await mkdir(join(dir, 'incoming'));
  // Mail processed just before a crash (its commit perhaps lost with the store): back to pending, older ones
  // forgotten. Then every mail kept and not yet processed: processed now, oldest first.
  const now = nowMillis();
  for (const name of await readdir(join(dir, 'done'))) {
    const ms = Number(name.slice(3, 16));
    if (now - ms < REPROCESS_WINDOW_MS) await rename(join(dir, 'done', name), join(dir, 'pending', name));
    else await rm(join(dir, 'done', name), { force: true });
  }
  for (const name of (await readdir(join(dir, 'pending'))).sort()) {
    if (name.endsWith('.json')) enqueue(name.slice(0, -'.json'.length));
  }

  return {
    port: (server.server.address() as AddressInfo).port,
    idle: () =>
      new Promise<void>((resolve) => {
        waiters.push(resolve);
        wakeIdle();
      }),
    async stop() {
      stopped = true;
      for (const { waiting } of retrying.values()) waiting?.abort();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
