import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll } from 'vitest';
import { type Sender, smtpSender } from '#lib/email/senders.ts';

/**
 * A relay for the outbox's tests: a real SMTP server on 127.0.0.1 that keeps what it accepts, parsed, and answers
 * RCPT as `answer` says (undefined: 250; a number: that refusal), so a test can refuse for a while, then accept.
 */
export interface SinkMail {
  envelopeFrom: string;
  recipients: string[];
  raw: Buffer;
  parsed: ParsedMail;
  /** When its DATA ended (performance.now()). */
  receivedAt: number;
  header: (name: string) => string | undefined;
}

export interface SmtpSink {
  port: number;
  url: string;
  mails: SinkMail[];
  /** Connections that failed under the sink (a client reset or killed mid-session). */
  connectionErrors: Error[];
  /** The RCPT answer for the next recipients: undefined accepts. */
  answer: ((recipient: string) => number | undefined) | undefined;
  stop(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const sink: SmtpSink = {
    port: 0,
    url: '',
    mails: [],
    connectionErrors: [],
    answer: undefined,
    stop: async () => undefined,
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    disableReverseLookup: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      const code = sink.answer?.(address.address);
      if (code === undefined) return callback();
      callback(Object.assign(new Error(`${code} refused by the test relay`), { responseCode: code }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      (stream as Readable).on('data', (chunk: Buffer) => chunks.push(chunk));
      (stream as Readable).on('end', () => {
        const raw = Buffer.concat(chunks);
        const receivedAt = performance.now();
        simpleParser(raw).then(
          (parsed) => {
            sink.mails.push({
              envelopeFrom: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
              recipients: session.envelope.rcptTo.map((r) => r.address),
              raw,
              parsed,
              receivedAt,
              header: (name) => {
                const value = parsed.headers.get(name.toLowerCase());
                if (value === undefined) return undefined;
                if (typeof value === 'string') return value;
                if (Array.isArray(value)) return value.join(' ');
                return (value as { text?: string; value?: string }).text ?? String(value);
              },
            });
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  // A client that dies mid-session (a killed service) resets its connection: the server reports that as an
  // 'error', which with no listener would end the test process. Kept, so a test may read what happened.
  server.on('error', (error: Error) => sink.connectionErrors.push(error));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.port = (server.server.address() as AddressInfo).port;
  sink.url = `smtp://127.0.0.1:${sink.port}`;
  sink.stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return sink;
}

/**
 * A file's relay: a sink started before its tests and the outbox's SMTP sender to it (lib/email/senders.ts), both
 * closed after them. Read `sink` and `relay` inside tests (they are set in beforeAll).
 */
export function useRelaySink(): { readonly sink: SmtpSink; readonly relay: Sender } {
  let sink: SmtpSink | undefined;
  let relay: Sender | undefined;
  beforeAll(async () => {
    sink = await startSmtpSink();
    relay = smtpSender(sink.url);
  });
  afterAll(async () => {
    relay?.close();
    await sink?.stop();
  });
  return {
    get sink() {
      if (!sink) throw new Error('useRelaySink: read inside a test');
      return sink;
    },
    get relay() {
      if (!relay) throw new Error('useRelaySink: read inside a test');
      return relay;
    },
  };
}
