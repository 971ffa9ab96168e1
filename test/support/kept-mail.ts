import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { newInboundId, type ReceivedMail } from '#lib/email/receive.ts';
import { formatTimestamp } from '#lib/time.ts';

/**
 * A raw mail `raw` from `mailFrom` to `address` kept in the mail folder `dir` (its `raw/` must exist) as the SMTP
 * server keeps one before it answers 250: what receiveMail is then called with.
 */
export async function keepRaw(
  dir: string,
  raw: string,
  envelope: { mailFrom: string; address: string },
): Promise<ReceivedMail> {
  const inboundId = newInboundId();
  const rawKey = `raw/${inboundId}.eml`;
  await writeFile(join(dir, rawKey), raw);
  return {
    inboundId,
    rawKey,
    receivedAt: formatTimestamp(Date.now() * 1000),
    mailFrom: envelope.mailFrom,
    recipients: [envelope.address],
  };
}

/** A mail from rita@customer.test to `address`, with `headers` (CRLF-ended lines) after From and To (keepRaw). */
export const keptMail = (dir: string, address: string, headers: string): Promise<ReceivedMail> =>
  keepRaw(dir, `From: rita@customer.test\r\nTo: ${address}\r\n${headers}\r\nbody\r\n`, {
    mailFrom: 'rita@customer.test',
    address,
  });

/** Sends a raw mail over SMTP to the local mail server on `port`; answers its inbound id (the 250's `queued as`). */
export async function submitRaw(
  port: number,
  raw: string,
  envelope: { from: string; to: string },
): Promise<string> {
  const info = await nodemailer
    .createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true })
    .sendMail({ envelope, raw });
  const id = /queued as (in_\w+)/.exec(info.response)?.[1];
  if (!id) throw new Error(`no inbound id in ${info.response}`);
  return id;
}
