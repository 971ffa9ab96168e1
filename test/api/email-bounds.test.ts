import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore, type MailServer, startMailServer } from '#infra/local/mail.ts';
import { type MailStore, receiveMail } from '#lib/email/receive.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { measureItemWrites } from '#test/support/item-sizes.ts';
import { keepRaw, submitRaw } from '#test/support/kept-mail.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * A mail's bounds (decisions.md, "The e-mail channel", "Bounded"; docs/email.md, "Bad mail"): its stored header
 * fields are bounded whatever it holds, its text is cut before quoted text is looked for, a mail that can never be
 * stored is logged `rejected` with its reason (never retried), and a store failure is retried later without holding
 * back other mail. npm start's SMTP server and queue on 127.0.0.1, processing into DynamoDB Local.
 */
const gateway = useGateway();
let server: MailServer;
let dir: string;

/** Kept mail carrying this header cannot be read while `storeDown` (the store failing, as a stalled bucket). */
const DOWN_MARK = 'X-Test-Store: down';
let storeDown = false;
function flakyStore(folder: string): MailStore {
  const store = folderMailStore(folder);
  return {
    ...store,
    openRaw(rawKey) {
      if (storeDown && readFileSync(join(folder, rawKey), 'utf8').includes(DOWN_MARK)) {
        const failing = new Readable({ read() {} });
        setImmediate(() =>
          failing.destroy(Object.assign(new Error('read ECONNRESET (test)'), { code: 'ECONNRESET' })),
        );
        return failing;
      }
      return store.openRaw(rawKey);
    },
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-bounds-'));
  server = await startMailServer({ port: 0, dir, store: flakyStore(dir) });
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;

async function mailAccount(extra: Record<string, unknown> = {}) {
  const domain = `b${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({ email: { addresses: [`support@${domain}`] }, ...extra });
  return { ...account, address: `support@${domain}` };
}

const inbound = async (account: TestAccount) => {
  const r = await gateway.call('GET', '/api/email/inbound?limit=100', { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Json[];
};

const submit = (raw: string, envelope: { from: string; to: string }) => submitRaw(server.port, raw, envelope);

/** The log entry of a mail once it is processed (a mail that is never processed fails here, with its label). */
const outcomeOf = (account: TestAccount, id: string, label: string, timeout = 20_000) =>
  waitFor(async () => (await inbound(account)).find((r) => r.id === id), { timeout, label });

const messagesOf = async (account: TestAccount, ticket: string) => {
  const r = await gateway.call('GET', `/api/tickets/${ticket}/messages?limit=100`, { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Json[];
};

const raw = (headers: string[], body: string) => `${headers.join('\r\n')}\r\n\r\n${body}\r\n`;

describe('a mail too large for one item as it was sent', () => {
  it('becomes a ticket with its header fields bounded: 50 Cc addresses and the count, the name and subject cut and marked', async () => {
    const account = await mailAccount();
    const cc = Array.from({ length: 25_000 }, (_, i) => `person${i}@many.test`);
    const id = await submit(
      raw(
        [
          `From: "${'N'.repeat(450_000)}" <rita@customer.test>`,
          `To: ${account.address}`,
          `Cc: ${cc.join(', ')}`,
          `Subject: ${'S'.repeat(1_000)}`,
          `Message-ID: <${randomBytes(6).toString('hex')}@customer.test>`,
        ],
        'Too many people.',
      ),
      { from: 'rita@customer.test', to: account.address },
    );
    const logged = await outcomeOf(account, id, 'the mail with 25,000 Cc addresses processed');
    expect(logged).toMatchObject({ outcome: 'new_ticket', from: 'rita@customer.test' });
    expect(logged.subject).toBe(`${'S'.repeat(254)}…`);
    const ticket = (await gateway.call('GET', `/api/tickets/${logged.ticket_uuid}`, { key: account.apiKey }))
      .body.data as Json;
    expect(ticket.subject).toBe(`${'S'.repeat(254)}…`);
    expect(ticket.requester).toMatchObject({ email: 'rita@customer.test', name: `${'N'.repeat(254)}…` });
    const [description] = await messagesOf(account, logged.ticket_uuid);
    expect(description?.email).toMatchObject({
      from: { email: 'rita@customer.test', name: `${'N'.repeat(254)}…` },
      to: [account.address],
      cc: cc.slice(0, 50),
      cc_count: 25_000,
      subject: `${'S'.repeat(254)}…`,
    });
    expect(description?.email).not.toHaveProperty('to_count');
  });
});

describe('a mail at every bound at once', () => {
  it('is a ticket: what the bounds keep fits one item (the largest written is measured)', async () => {
    const account = await mailAccount();
    const address = (n: number) => `${String(n).padStart(3, '0')}${'a'.repeat(237)}@bound.example`;
    const boundary = 'b-every';
    const part = (n: number) =>
      [
        `--${boundary}`,
        `Content-Type: application/${'x'.repeat(300)}`,
        `Content-Disposition: attachment; filename="${'€'.repeat(300)}${n}"`,
        '',
        'data',
      ].join('\r\n');
    const kept = await keepRaw(
      dir,
      raw(
        [
          `From: "${'€'.repeat(1_000)}" <${address(0)}>`,
          `To: ${account.address}, ${Array.from({ length: 60 }, (_, i) => address(i + 1)).join(', ')}`,
          `Cc: ${Array.from({ length: 60 }, (_, i) => address(i + 100)).join(', ')}`,
          `Subject: ${'€'.repeat(1_000)}`,
          `Message-ID: <${'m'.repeat(890)}@customer.test>`,
          `In-Reply-To: <${'r'.repeat(890)}@customer.test>`,
          'MIME-Version: 1.0',
          `Content-Type: multipart/mixed; boundary="${boundary}"`,
        ],
        [
          `--${boundary}`,
          'Content-Type: text/plain; charset=utf-8',
          'Content-Transfer-Encoding: 8bit',
          '',
          '€'.repeat(70_000),
          ...Array.from({ length: 105 }, (_, n) => part(n)),
          `--${boundary}--`,
        ].join('\r\n'),
      ),
      { mailFrom: 'rita@customer.test', address: account.address },
    );
    expect(address(0).length).toBe(254);
    let records: Awaited<ReturnType<typeof receiveMail>> = [];
    const writes = await measureItemWrites(async () => {
      records = await receiveMail(kept, folderMailStore(dir));
    }, [account.accountId]);
    expect(records).toMatchObject([{ outcome: 'new_ticket' }]);
    const largest = writes.reduce((a, b) => (b.bytesAfter > a.bytesAfter ? b : a));
    console.log(`a mail at every bound: largest item ${largest.shape}, ${largest.bytesAfter} bytes`);
    expect(largest.bytesAfter).toBeLessThan(400 * 1024);
    const [description] = await messagesOf(account, records[0]?.ticketUuid as string);
    expect(description?.body).toBe('€'.repeat(65_536));
    expect(description?.email).toMatchObject({ to_count: 61, cc_count: 60, body_truncated: true });
    expect(description?.attachments).toHaveLength(100);
  });
});

describe('a mail that can never be stored', () => {
  it('is logged `rejected` with the reason, once, and never retried', async () => {
    const account = await mailAccount();
    const kept = await keepRaw(
      dir,
      raw(['From: rita@customer.test', `To: ${account.address}`, 'Subject: refused'], 'body'),
      { mailFrom: 'rita@customer.test', address: account.address },
    );
    const store = folderMailStore(dir);
    // The store refuses the ticket's commit as it refuses an item over 400 KB: no retry can ever store it.
    const { result } = await withFault({ operation: 'TransactWriteItems', mode: 'refused' }, () =>
      receiveMail(kept, store),
    );
    expect(result).toMatchObject([{ outcome: 'rejected', reason: expect.stringMatching(/^unstorable: /) }]);
    const logged = await inbound(account);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ outcome: 'rejected', subject: 'refused', ticket_uuid: null });
    // Processed again (a crash after the log entry): its first outcome stands.
    expect((await receiveMail(kept, store))[0]?.outcome).toBe('rejected');
    expect((await gateway.call('GET', '/api/tickets', { key: account.apiKey })).body.data).toEqual([]);
  });
});

describe('a store failure', () => {
  it('is retried later without holding back other mail: four failing mails, then another account’s mail is processed', async () => {
    const failing = await mailAccount();
    const other = await mailAccount();
    storeDown = true;
    try {
      const ids = await Promise.all(
        [1, 2, 3, 4].map((n) =>
          submit(
            raw(['From: rita@customer.test', `To: ${failing.address}`, `Subject: held ${n}`, DOWN_MARK], 'x'),
            { from: 'rita@customer.test', to: failing.address },
          ),
        ),
      );
      const id = await submit(
        raw(['From: omar@customer.test', `To: ${other.address}`, 'Subject: not held back'], 'hello'),
        { from: 'omar@customer.test', to: other.address },
      );
      expect(await outcomeOf(other, id, "the other account's mail processed", 10_000)).toMatchObject({
        outcome: 'new_ticket',
        subject: 'not held back',
      });
      // The failing ones are not lost: they wait, unlogged, for the store.
      expect(await inbound(failing)).toEqual([]);
      storeDown = false;
      for (const held of ids) {
        expect(await outcomeOf(failing, held, 'a held mail processed once the store is back')).toMatchObject({
          outcome: 'new_ticket',
        });
      }
    } finally {
      storeDown = false;
    }
  });
});

describe('the body', () => {
  it('of a 3 MB text mail is cut to 65,536 characters and marked, and the mail processed', async () => {
    const account = await mailAccount();
    const line = 'A log line pasted in full, one after another.\r\n';
    const id = await submit(
      raw(
        ['From: rita@customer.test', `To: ${account.address}`, 'Subject: the whole log'],
        line.repeat(Math.ceil(3_000_000 / line.length)),
      ),
      { from: 'rita@customer.test', to: account.address },
    );
    const logged = await outcomeOf(account, id, 'the 3 MB text mail processed');
    expect(logged.outcome).toBe('new_ticket');
    const [description] = await messagesOf(account, logged.ticket_uuid);
    expect(description?.body.length).toBeLessThanOrEqual(65_536);
    expect(description?.body.startsWith('A log line pasted in full, one after another.\n')).toBe(true);
    expect(description?.email).toMatchObject({ body_truncated: true, quoted_text_removed: false });
  });

  it('says quoted text was removed only when quoted history or a signature was taken out (not trimmed blanks)', async () => {
    const account = await mailAccount();
    const bodies = [
      ['blanks', 'Hello   \r\nthe printer is on fire.   \r\n\r\n\r\n', false],
      [
        'quote',
        'Thanks!\r\n\r\nOn Mon, 1 Jan 2026 at 10:00, Ann <ann@acme.test> wrote:\r\n> Is it fixed?',
        true,
      ],
      ['signature', 'It is burning.\r\n\r\n-- \r\nRita\r\nSent from my phone', true],
    ] as const;
    for (const [subject, body, removed] of bodies) {
      const id = await submit(
        raw(['From: rita@customer.test', `To: ${account.address}`, `Subject: ${subject}`], body),
        { from: 'rita@customer.test', to: account.address },
      );
      const logged = await outcomeOf(account, id, `the ${subject} mail processed`);
      const [description] = await messagesOf(account, logged.ticket_uuid);
      expect(description?.email.quoted_text_removed, subject).toBe(removed);
    }
  });
});
