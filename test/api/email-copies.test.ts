import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { getInbound } from '#lib/data/mail/inbound.ts';
import { folderMailEraser, folderMailStore, MAIL_DIR_VARIABLE } from '#lib/data/mail-store.ts';
import { purgeOne } from '#lib/data/trash/purge.ts';
import { receiveMail } from '#lib/email/receive.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { keepRaw } from '#test/support/kept-mail.ts';

/**
 * One delivery to several accounts is several mails (decisions.md, "The e-mail channel"): each account keeps its own
 * raw copy and attachments, and nothing one account does (an erasure, a deletion, a purge) touches another's. Also
 * what the local mail folder keeps of a mail (its copy, attachments, the queue's records) goes with its ticket's
 * purge, whether the trash's or an erasure's. npm start's SMTP server, the folder store (MAIL_DIR, as npm start sets
 * it) and the API through the local gateway.
 */
const gateway = useGateway();
let server: MailServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-copies-'));
  process.env[MAIL_DIR_VARIABLE] = dir;
  server = await startMailServer({ port: 0, dir });
  // Where keepRaw keeps a delivery, as the SMTP server does.
  await mkdir(join(dir, 'raw'), { recursive: true });
});
afterAll(async () => {
  await server?.stop();
  delete process.env[MAIL_DIR_VARIABLE];
  await rm(dir, { recursive: true, force: true });
});

const tag = () => randomBytes(4).toString('hex');

/** Sends one mail (one SMTP transaction) and waits until the server has processed it; answers its 250's text. */
async function send(mail: SendMailOptions): Promise<string> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: server.port,
    secure: false,
    ignoreTLS: true,
  });
  const info = await transport.sendMail(mail);
  await server.idle();
  return info.response;
}

async function mailAccount(): Promise<TestAccount & { address: string }> {
  const address = `support@m${tag()}.test`;
  return { ...(await createTestAccount({ email: { addresses: [address] } })), address };
}

/** The newest mail of the account's inbound log: its ticket and message. */
async function newestMail(account: TestAccount) {
  const log = await gateway.call('GET', '/api/email/inbound', { key: account.apiKey });
  const [entry] = log.body.data;
  return {
    inboundId: entry.id as string,
    ticket: entry.ticket_uuid as string,
    message: entry.message_id as string,
  };
}

/** A message's raw mail and first attachment, downloaded through the API: the status and the bytes of each. */
async function downloads(account: TestAccount, mail: { ticket: string; message: string }) {
  const base = `${gateway.baseUrl}/api/tickets/${mail.ticket}/messages/${mail.message}`;
  const get = async (path: string) => {
    const r = await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${account.apiKey}` } });
    return { status: r.status, bytes: Buffer.from(await r.arrayBuffer()) };
  };
  return { raw: await get('/raw'), attachment: await get('/attachments/att_0001') };
}

async function erase(account: TestAccount, email: string) {
  const started = await gateway.call('POST', '/api/erasures', { key: account.apiKey, body: { email } });
  expect(started.status, started.text).toBe(202);
  await runErasure(account.accountId, started.body.data.id, { mail: folderMailEraser(dir) });
}

/** Deletes the ticket and purges it from the trash, as the trash's purge does once its time has come. */
async function deleteAndPurge(account: TestAccount, ticket: string) {
  const deleted = await gateway.call('DELETE', `/api/tickets/${ticket}`, { key: account.apiKey });
  expect(deleted.status, deleted.text).toBe(200);
  const late = Date.parse(deleted.body.data.purge_at) * 1000 + 1000;
  expect(await purgeOne(account.accountId, ticket, late, folderMailEraser(dir))).toBeDefined();
}

/** Every file of the mail folder whose bytes hold `text`, by its path in the folder. */
async function filesHolding(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(text)) found.push(relative(dir, path));
  }
  return found;
}

describe('one delivery to two accounts', () => {
  it("is two mails: every erasure and purge of one account leaves the other's raw mail and attachment byte for byte", async () => {
    const b = await mailAccount();
    const g = await mailAccount();
    const sender = `rita.${tag()}@customer.test`;
    const copied = `carol.${tag()}@customer.test`;
    const photo = Buffer.concat([randomBytes(1500), Buffer.from(` ${sender} `)]);
    const answer = await send({
      from: `Rita Sender <${sender}>`,
      to: [b.address, g.address],
      cc: `Carol Copied <${copied}>`,
      subject: `Order for both ${tag()}`,
      messageId: `<${tag()}@customer.test>`,
      text: `Hello, I am ${sender}.`,
      attachments: [{ filename: 'photo.bin', content: photo }],
    });
    const inG = await newestMail(g);
    const inB = await newestMail(b);
    expect(inB.inboundId).toBe(inG.inboundId);
    // The 250 came once each account's copy was kept.
    expect(answer).toContain(inG.inboundId);
    const kept = await downloads(g, inG);
    expect(kept.raw.status).toBe(200);
    expect(kept.raw.bytes.toString('latin1')).toContain(copied);
    expect(kept.attachment).toEqual({ status: 200, bytes: photo });
    const untouched = async (step: string) => {
      const now = await downloads(g, inG);
      expect(now.raw.status, step).toBe(200);
      expect(now.raw.bytes.equals(kept.raw.bytes), step).toBe(true);
      expect(now.attachment.status, step).toBe(200);
      expect(now.attachment.bytes.equals(photo), step).toBe(true);
    };

    // In B: the Cc'd person (B's copy of the raw mail names them: it is erased, G's is not).
    await erase(b, copied);
    expect((await downloads(b, inB)).raw.bytes.toString()).toBe('[erased]');
    await untouched('carol erased in B');
    // G's own address, erased in B (B's mail named it in To).
    await erase(b, g.address);
    await untouched("G's address erased in B");
    // The sender: B's raw mail and attachment erased.
    await erase(b, sender);
    expect(await downloads(b, inB)).toMatchObject({
      raw: { bytes: Buffer.from('[erased]') },
      attachment: { bytes: Buffer.from('[erased]') },
    });
    await untouched('sender erased in B');

    // A second delivery to both, its ticket deleted in B and purged from B's trash: B's copy is gone.
    const again = `Second for both ${tag()}`;
    await send({
      from: `other.${tag()}@customer.test`,
      to: [b.address, g.address],
      subject: again,
      text: 'Another one.',
      attachments: [{ filename: 'photo.bin', content: photo }],
    });
    const secondG = await newestMail(g);
    const secondB = await newestMail(b);
    const secondKept = await downloads(g, secondG);
    await deleteAndPurge(b, secondB.ticket);
    await deleteAndPurge(b, inB.ticket);
    await untouched('both tickets purged in B');
    expect(await downloads(g, secondG)).toEqual(secondKept);
    expect((await filesHolding(again)).every((path) => path.includes(g.accountId))).toBe(true);
  });

  it('a failure at any point, then the same kept mail again: one outcome per account, each copy whole, the delivery gone', async () => {
    const b = await mailAccount();
    const g = await mailAccount();
    const store = folderMailStore(dir);
    const raw = [
      'From: rita@customer.test',
      `To: ${b.address}, ${g.address}`,
      'Subject: crash',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'Hello both.',
      '--b1',
      'Content-Type: application/octet-stream',
      'Content-Disposition: attachment; filename="a.bin"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('attached bytes').toString('base64'),
      '--b1--',
      '',
    ].join('\r\n');
    const deliver = async (name: string) => {
      const subject = `crash ${name}-${tag()}`;
      const headers = `Subject: ${subject}\r\nMessage-ID: <${tag()}.${name}@c.test>`;
      const kept = await keepRaw(dir, raw.replace('Subject: crash', headers), {
        mailFrom: 'rita@customer.test',
        address: b.address,
      });
      return { ...kept, recipients: [b.address, g.address], subject };
    };
    /** The folder store failing its `at`-th call (counted over every method). */
    const failing = (at: number) => {
      let calls = 0;
      const fail = () => {
        calls++;
        if (calls === at) throw new Error(`mail store down (injected at ${at})`);
      };
      return new Proxy(store, {
        get(target, name) {
          const method = target[name as keyof typeof target] as unknown;
          if (typeof method !== 'function') return method;
          return (...args: unknown[]) => {
            if (name === 'openRaw') {
              const stream = (method as (...a: unknown[]) => Readable).apply(target, args);
              try {
                fail();
              } catch (error) {
                queueMicrotask(() => stream.destroy(error as Error));
              }
              return stream;
            }
            return Promise.resolve()
              .then(fail)
              .then(() => (method as (...a: unknown[]) => Promise<unknown>).apply(target, args));
          };
        },
      });
    };
    /** Processed again: one outcome per account (the first one's ticket), each copy whole, nothing else left. */
    const check = async (mail: Awaited<ReturnType<typeof deliver>>, step: string) => {
      const records = await receiveMail(mail, store);
      expect(records, step).toHaveLength(2);
      for (const account of [b, g]) {
        const record = await getInbound(account.accountId, mail.inboundId);
        expect(record?.outcome, step).toBe('new_ticket');
        expect(records, step).toContainEqual(record);
        const got = await downloads(account, {
          ticket: String(record?.ticketUuid),
          message: String(record?.messageId),
        });
        expect(got.raw.bytes.toString('latin1'), step).toContain(mail.subject);
        expect(got.attachment, step).toEqual({ status: 200, bytes: Buffer.from('attached bytes') });
      }
      // The two copies, and nothing else (the kept delivery is gone once they are made).
      const holding = await filesHolding(`Subject: ${mail.subject}`);
      expect(holding, step).toHaveLength(2);
      for (const account of [b, g])
        expect(
          holding.filter((p) => p.includes(account.accountId)),
          step,
        ).toHaveLength(1);
    };
    // The mail store failing at each of its calls in turn.
    const probe = await deliver('probe');
    let storeCalls = 0;
    const counting = new Proxy(store, {
      get(target, name) {
        const method = target[name as keyof typeof target] as unknown;
        if (typeof method !== 'function') return method;
        return (...args: unknown[]) => {
          storeCalls++;
          return (method as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    await receiveMail(probe, counting);
    expect(storeCalls).toBeGreaterThan(4);
    for (let at = 1; at <= storeCalls; at++) {
      const mail = await deliver(`store-${at}`);
      await receiveMail(mail, failing(at)).catch(() => undefined);
      await check(mail, `mail store failing at call ${at}`);
    }
    // The table failing at each of its calls in turn, each way a call fails.
    const measured = await deliver('db');
    const { operations } = await withFault(undefined, () => receiveMail(measured, store));
    // The answer lost after the write landed (the other ways a call fails: test/api/email-faults.test.ts).
    const mode: FaultMode = 'lost-answer';
    for (let at = 1; at <= operations.length; at++) {
      const mail = await deliver(`db-${at}`);
      await withFault({ at, mode }, () => receiveMail(mail, store)).catch(() => undefined);
      await check(mail, `table failing (${mode}) at call ${at}`);
    }
  }, 180_000);
});

describe('the local mail folder', () => {
  it("goes with its ticket's purge: its copy, attachments and the queue's records (the envelope sender) are gone", async () => {
    const b = await mailAccount();
    const envelope = `bounces.${tag()}@customer.test`;
    const marker = `purge-me-${tag()}`;
    await send({
      envelope: { from: envelope, to: [b.address] },
      from: `someone@customer.test`,
      to: b.address,
      subject: marker,
      text: `${marker} in the body`,
      attachments: [{ filename: 'a.txt', content: `${marker} attached` }],
    });
    const mail = await newestMail(b);
    expect((await filesHolding(marker)).length).toBeGreaterThan(0);
    expect((await filesHolding(envelope)).length).toBeGreaterThan(0);
    await deleteAndPurge(b, mail.ticket);
    expect(await filesHolding(marker)).toEqual([]);
    expect(await filesHolding(envelope)).toEqual([]);
  });

  it("goes with an erasure's purge of a ticket in the trash: the other mail on it too", async () => {
    const b = await mailAccount();
    const person = `asker.${tag()}@customer.test`;
    const other = `helper.${tag()}@customer.test`;
    const opening = `<open.${tag()}@customer.test>`;
    await send({ from: person, to: b.address, subject: 'Question', messageId: opening, text: 'Help?' });
    const mail = await newestMail(b);
    const marker = `helper-${tag()}`;
    await send({
      envelope: { from: other, to: [b.address] },
      from: other,
      to: b.address,
      subject: 'Re: Question',
      inReplyTo: opening,
      text: `${marker}: try turning it off.`,
      attachments: [{ filename: 'howto.txt', content: `${marker} attached` }],
    });
    expect((await newestMail(b)).ticket).toBe(mail.ticket);
    expect((await filesHolding(marker)).length).toBeGreaterThan(0);
    const deleted = await gateway.call('DELETE', `/api/tickets/${mail.ticket}`, { key: b.apiKey });
    expect(deleted.status, deleted.text).toBe(200);
    await erase(b, person);
    expect(await filesHolding(marker)).toEqual([]);
    expect(await filesHolding(other)).toEqual([]);
    expect(await filesHolding(person)).toEqual([]);
  });
});
