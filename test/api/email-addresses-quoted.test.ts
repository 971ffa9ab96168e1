import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailEraser, folderMailStore } from '#lib/data/mail-store.ts';
import { receiveMail } from '#lib/email/receive.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { keepRaw } from '#test/support/kept-mail.ts';

/**
 * A quoted local part written with a quoted-pair it does not need (`"john\ doe"@…`: RFC 5322 3.2.1, the same
 * mailbox as `"john doe"@…`) is one person (decisions.md, "Deleting, restoring and erasing": any address the
 * service can hold is accepted, and the erasure finds what the person wrote). Today the reader keeps such a local
 * part as written (lib/email/addresses.ts: it drops the quotes only when the part needs none), so the erasure of
 * `"john doe"@…` misses the ticket its owner opened as `John Doe <"John\ Doe"@…>` (mailparser keeps the pair when
 * the address has a display name, and drops it when it has none: one sender, two requesters), and the reverse.
 * Found by the review of issues 37/38.
 */
const gateway = useGateway();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-quoted-'));
  await mkdir(join(dir, 'raw'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('a quoted local part with a needless quoted-pair', () => {
  const tag = randomBytes(3).toString('hex');
  it.each([
    [`John Doe <"John\\ Doe"@${tag}.example>`, `"john doe"@${tag}.example`],
    [`John Doe <"john doe"@${tag}.example>`, `"john\\ doe"@${tag}.example`],
  ])('mailed as %s, is erased by %s', async (from, erase) => {
    const domain = `q${randomBytes(5).toString('hex')}.test`;
    const account = await createTestAccount({ email: { addresses: [`support@${domain}`] } });
    const kept = await keepRaw(
      dir,
      `From: ${from}\r\nTo: support@${domain}\r\nSubject: hello\r\n` +
        `Message-ID: <${randomBytes(6).toString('hex')}@customer.test>\r\n\r\nPlease help.\r\n`,
      { mailFrom: 'bounce@customer.test', address: `support@${domain}` },
    );
    const [record] = await receiveMail(kept, folderMailStore(dir));
    expect(record).toMatchObject({ outcome: 'new_ticket' });
    const started = await gateway.call('POST', '/api/erasures', {
      key: account.apiKey,
      body: { email: erase },
    });
    expect(started.status, started.text).toBe(202);
    await runErasure(account.accountId, started.body.data.id, { mail: folderMailEraser(dir) });
    const ticket = await gateway.call('GET', `/api/tickets/${record?.ticketUuid}`, { key: account.apiKey });
    expect(ticket.body.data.requester, 'the ticket its owner opened, after the erasure').toMatchObject({
      email: null,
      erased: true,
    });
  });
});
