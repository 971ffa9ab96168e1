import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore } from '#infra/local/mail.ts';
import { queryInbound } from '#lib/data/mail/inbound.ts';
import { findTicketPage } from '#lib/data/tickets/tickets.ts';
import { receiveMail } from '#lib/email/receive.ts';
import { listMessages } from '#lib/tickets/messages/read.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { keptMail } from '#test/support/kept-mail.ts';

/**
 * A kept mail whose processing fails at any store call (the request lost, the answer lost after the write
 * landed, a conflict), then processed again as npm start's queue does: always exactly one ticket or message,
 * and the log entry names it (docs/email.md, "Exactly once").
 */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-faults-'));
  await mkdir(join(dir, 'raw'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];

describe('processing a kept mail again after a fault', () => {
  it('makes each mail exactly one ticket or message, whichever store call failed', async () => {
    const domain = `f${randomBytes(4).toString('hex')}.test`;
    const address = `support@${domain}`;
    const account = await createTestAccount({ email: { addresses: [address] } });
    const store = folderMailStore(dir);
    const keep = (headers: string) => keptMail(dir, address, headers);
    const opener = `<open-${randomBytes(4).toString('hex')}@customer.test>`;
    await receiveMail(await keep(`Subject: opener\r\nMessage-ID: ${opener}\r\n`), store);
    const uuid = (await queryInbound(account.accountId, undefined, 1))[0]?.ticketUuid as string;

    const kinds = [
      ['reply', (id: string) => `Subject: reply\r\nMessage-ID: ${id}\r\nIn-Reply-To: ${opener}\r\n`],
      ['new', (id: string) => `Subject: new ${id}\r\nMessage-ID: ${id}\r\n`],
    ] as const;
    let replies = 0;
    let tickets = 1;
    for (const [kind, headers] of kinds) {
      const probe = await keep(headers(`<p-${kind}-${randomBytes(4).toString('hex')}@c.test>`));
      const { operations } = await withFault(undefined, () => receiveMail(probe, store));
      expect(operations).toContain('TransactWriteItems');
      if (kind === 'reply') replies++;
      else tickets++;
      for (let at = 1; at <= operations.length; at++) {
        for (const mode of MODES) {
          const mail = await keep(
            headers(`<${kind}-${at}-${mode}-${randomBytes(4).toString('hex')}@c.test>`),
          );
          await withFault({ at, mode }, () => receiveMail(mail, store)).catch(() => undefined);
          const [again] = await receiveMail(mail, store);
          expect(again?.outcome, `${kind} ${mode} at ${at}`).toBe(
            kind === 'reply' ? 'threaded' : 'new_ticket',
          );
          if (kind === 'reply') replies++;
          else tickets++;
        }
      }
    }
    const conversation = await listMessages(account.accountId, uuid, { limit: ['100'] });
    expect(conversation.data.length).toBe(1 + replies);
    const { total } = await findTicketPage(account.accountId, {
      filter: { customFields: [] },
      words: [],
      offset: 0,
      limit: 1,
    });
    expect(total).toBe(tickets);
  }, 120_000);
});
