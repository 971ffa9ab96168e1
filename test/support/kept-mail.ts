import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { newInboundId, type ReceivedMail } from '#lib/email/receive.ts';
import { formatTimestamp } from '#lib/time.ts';

/**
 * A mail from rita@customer.test to `address` kept in the mail folder `dir` (its `raw/` must exist) as the SMTP
 * server keeps one before it answers 250, with `headers` (CRLF-ended lines) after From and To: what receiveMail
 * is then called with.
 */
export async function keptMail(dir: string, address: string, headers: string): Promise<ReceivedMail> {
  const inboundId = newInboundId();
  const rawKey = `raw/${inboundId}.eml`;
  await writeFile(join(dir, rawKey), `From: rita@customer.test\r\nTo: ${address}\r\n${headers}\r\nbody\r\n`);
  return {
    inboundId,
    rawKey,
    receivedAt: formatTimestamp(Date.now() * 1000),
    mailFrom: 'rita@customer.test',
    recipients: [address],
  };
}
