import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore, type MailServer, startMailServer } from '#infra/local/mail.ts';
import { type MailStore, receiveMail } from '#lib/email/receive.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { keepRaw } from '#test/support/kept-mail.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * A mail's bounds (decisions.md, "The e-mail channel", "Bounded"; docs/email.md, "Bad mail"): a mail that can
 * never be stored is logged `rejected` with its reason (never retried), and a store failure is retried later without
 * holding back other mail. npm start's SMTP server and queue on 127.0.0.1, processing into DynamoDB Local.
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

/** Sends a raw mail over SMTP; answers its inbound id (from the 250's `queued as`). */
async function submit(raw: string, envelope: { from: string; to: string }): Promise<string> {
  const info = await nodemailer
    .createTransport({ host: '127.0.0.1', port: server.port, secure: false, ignoreTLS: true })
    .sendMail({ envelope, raw });
  const id = /queued as (in_\w+)/.exec(info.response)?.[1];
  if (!id) throw new Error(`no inbound id in ${info.response}`);
  return id;
}

/** The log entry of a mail once it is processed (a mail that is never processed fails here, with its label). */
const outcomeOf = (account: TestAccount, id: string, label: string, timeout = 20_000) =>
  waitFor(async () => (await inbound(account)).find((r) => r.id === id), { timeout, label });

const raw = (headers: string[], body: string) => `${headers.join('\r\n')}\r\n\r\n${body}\r\n`;

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
