import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { attachmentKey, MAIL_DIR_VARIABLE, rawCopyKey } from '#lib/data/mail-store.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * A message's raw mail and attachments, downloaded (decisions.md, "The e-mail channel"): a real SMTP client
 * against npm start's SMTP server, the bytes read back through the API from the same folder store the server kept
 * them in (MAIL_DIR, as npm start sets it). The S3 store's side is test/unit/mail-store-s3.test.ts.
 */
const gateway = useGateway();
let server: MailServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-'));
  process.env[MAIL_DIR_VARIABLE] = dir;
  server = await startMailServer({ port: 0, dir });
});
afterAll(async () => {
  await server?.stop();
  delete process.env[MAIL_DIR_VARIABLE];
  await rm(dir, { recursive: true, force: true });
});

async function send(mail: SendMailOptions) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: server.port,
    secure: false,
    ignoreTLS: true,
  });
  await transport.sendMail(mail);
  await server.idle();
}

async function mailAccount(): Promise<TestAccount & { address: string }> {
  const domain = `d${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({ email: { addresses: [`support@${domain}`] } });
  return { ...account, address: `support@${domain}` };
}

// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;

describe('raw mail and attachments', () => {
  let a: TestAccount & { address: string };
  let ticket: string;
  let message: Json;
  const attachment = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80]);

  beforeAll(async () => {
    a = await mailAccount();
    await send({
      from: 'rita@customer.test',
      to: a.address,
      subject: 'With a file',
      messageId: `<${randomBytes(6).toString('hex')}@customer.test>`,
      text: 'See attached.',
      attachments: [
        { filename: 'bytes.bin', content: attachment },
        { filename: 'page.html', content: '<script>alert(1)</script>', contentType: 'text/html' },
      ],
    });
    const log = await gateway.call('GET', '/api/email/inbound', { key: a.apiKey });
    ticket = log.body.data[0].ticket_uuid;
    const list = await gateway.call('GET', `/api/tickets/${ticket}/messages`, { key: a.apiKey });
    message = list.body.data[0];
  });

  it('serves the raw mail byte for byte as kept (trace header first) as message/rfc822, never cached', async () => {
    const r = await fetch(`${gateway.baseUrl}/api/tickets/${ticket}/messages/${message.id}/raw`, {
      headers: { Authorization: `Bearer ${a.apiKey}` },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('message/rfc822');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('content-disposition')).toBe(
      `attachment; filename="${message.id}.eml"; filename*=UTF-8''${message.id}.eml`,
    );
    const bytes = Buffer.from(await r.arrayBuffer());
    const log = await gateway.call('GET', '/api/email/inbound', { key: a.apiKey });
    const kept = await readFile(join(dir, rawCopyKey(a.accountId, log.body.data[0].id)));
    expect(bytes.equals(kept)).toBe(true);
    expect(bytes.toString('latin1')).toMatch(/^Received: from /);
    expect(bytes.toString('latin1')).toContain('Subject: With a file');
    // By the ticket's reference too, as GET names a ticket; and the contract check of the answer.
    const byReference = await gateway.call(
      'GET',
      `/api/tickets/${(await gateway.call('GET', `/api/tickets/${ticket}`, { key: a.apiKey })).body.data.reference}/messages/${message.id}/raw`,
      { key: a.apiKey },
    );
    expect(byReference.status).toBe(200);
  });

  it('serves each attachment as application/octet-stream with its name, binary intact, HTML not rendered', async () => {
    expect(message.attachments).toHaveLength(2);
    const [bin, html] = message.attachments as Json[];
    const get = (id: string) =>
      fetch(`${gateway.baseUrl}/api/tickets/${ticket}/messages/${message.id}/attachments/${id}`, {
        headers: { Authorization: `Bearer ${a.apiKey}` },
      });
    const r = await get(bin?.id);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    expect(r.headers.get('content-disposition')).toContain('filename="bytes.bin"');
    expect(Buffer.from(await r.arrayBuffer()).equals(attachment)).toBe(true);
    const page = await get(html?.id);
    expect(page.headers.get('content-type')).toBe('application/octet-stream');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await page.text()).toBe('<script>alert(1)</script>');
    // Through the contract check too.
    expect(
      (
        await gateway.call('GET', `/api/tickets/${ticket}/messages/${message.id}/attachments/${bin?.id}`, {
          key: a.apiKey,
        })
      ).status,
    ).toBe(200);
  });

  it('answers 404 for an unknown attachment, a message without mail, and what the store no longer keeps', async () => {
    const base = `/api/tickets/${ticket}/messages/${message.id}`;
    expect((await gateway.call('GET', `${base}/attachments/att_0099`, { key: a.apiKey })).status).toBe(404);
    const posted = await gateway.call('POST', `/api/tickets/${ticket}/messages`, {
      key: a.apiKey,
      body: { body: 'an API reply', author: 'requester' },
    });
    expect(posted.status, posted.text).toBe(201);
    const apiMessage = posted.body.data.id as string;
    expect(
      (await gateway.call('GET', `/api/tickets/${ticket}/messages/${apiMessage}/raw`, { key: a.apiKey }))
        .status,
    ).toBe(404);
    expect(
      (
        await gateway.call('GET', `/api/tickets/${ticket}/messages/${apiMessage}/attachments/att_0001`, {
          key: a.apiKey,
        })
      ).status,
    ).toBe(404);
    // Expired (the bucket's lifecycle) or removed: 404, not a 500.
    const log = await gateway.call('GET', '/api/email/inbound', { key: a.apiKey });
    const inboundId = log.body.data.at(-1).id as string;
    await rm(join(dir, attachmentKey(a.accountId, inboundId, 'att_0002')));
    expect((await gateway.call('GET', `${base}/attachments/att_0002`, { key: a.apiKey })).status).toBe(404);
  });

  it("another account cannot fetch A's raw mail or attachments, by any id", async () => {
    const b = await mailAccount();
    for (const path of [
      `/api/tickets/${ticket}/messages/${message.id}/raw`,
      `/api/tickets/${ticket}/messages/${message.id}/attachments/att_0001`,
    ]) {
      const r = await gateway.call('GET', path, { key: b.apiKey });
      expect(r.status, path).toBe(404);
      expect(r.text).not.toContain('See attached');
    }
  });

  it('is a 404 for an unknown message even where no mail store is named (the store is read only for mail)', async () => {
    delete process.env[MAIL_DIR_VARIABLE];
    try {
      const unknown = `/api/tickets/${ticket}/messages/msg_0000000099aaaaaaaaaaaaaaaa`;
      expect((await gateway.call('GET', `${unknown}/raw`, { key: a.apiKey })).status).toBe(404);
      expect((await gateway.call('GET', `${unknown}/attachments/att_0001`, { key: a.apiKey })).status).toBe(
        404,
      );
    } finally {
      process.env[MAIL_DIR_VARIABLE] = dir;
    }
  });

  it('needs tickets:read, checked before anything else', async () => {
    const key = await gateway.call('POST', '/api/keys', {
      key: a.apiKey,
      body: { name: 'deals only', scopes: ['deals:read'] },
    });
    expect(key.status, key.text).toBe(201);
    const r = await gateway.call('GET', `/api/tickets/${ticket}/messages/${message.id}/raw`, {
      key: key.body.data.api_key,
    });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe('This key lacks the scope tickets:read.');
  });
});
