import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SESEvent } from 'aws-lambda';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as routeFunction } from '#functions/email-inbound.ts';
import { handler as processFunction } from '#functions/email-inbound-queue.ts';
import { getInbound } from '#lib/data/mail/inbound.ts';
import {
  attachmentKey,
  type MailObjectStore,
  RAW_MAIL_PREFIX,
  s3MailEraser,
  s3MailStore,
} from '#lib/data/mail-store.ts';
import { purgeOne } from '#lib/data/trash/purge.ts';
import { attachmentOf, INLINE_MAX_BYTES, rawMailOf } from '#lib/email/downloads.ts';
import type { QueuedMail } from '#lib/email/inbound-queue.ts';
import { receiveMail } from '#lib/email/receive.ts';
import { inboundIdOf, receiveSesEvent } from '#lib/email/ses-receipt.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { checkAnswer } from '#test/support/contract.ts';
import { withEnvironment } from '#test/support/environment.ts';
import { type FakeSqs, startFakeSqs } from '#test/support/fake-sqs.ts';
import { useGateway } from '#test/support/http.ts';
import { type LocalS3, startLocalS3 } from '#test/support/s3.ts';

/**
 * Receiving deployed, against a real S3 protocol server (s3rver, an S3 emulator on 127.0.0.1) and DynamoDB Local:
 * a raw mail put where SES's S3 action puts it, the SES event the receipt rule's Lambda action sends, the deployed
 * code path (the inbound function's routing, then the processing function's, with the S3 store), the attachment
 * uploaded to the bucket, and the downloads read back from it, a large one through a presigned link. What s3rver cannot show (IAM, the bucket's encryption
 * and lifecycle, SES itself) is checked on the synthesized stack (test/system/stack.test.ts).
 */
const gateway = useGateway();
const BUCKET = 'deskpipe-test-mail';
let s3: LocalS3;
let client: S3Client;
let endpoint: string;
let store: MailObjectStore;
let sqs: FakeSqs;

beforeAll(async () => {
  s3 = await startLocalS3(BUCKET);
  ({ client, endpoint } = s3);
  store = s3MailStore(BUCKET, client);
  sqs = await startFakeSqs();
});
afterAll(async () => {
  await sqs?.close();
  await s3?.stop();
});

/** What SES does for one mail: the raw bytes to `raw/<id>`, then the event of the rule's Lambda action. */
async function sesDelivers(
  raw: Buffer,
  recipients: string[],
  source = 'rita@customer.test',
  verdicts: Record<string, { status: string }> = {},
) {
  const messageId = randomBytes(16).toString('hex');
  await client.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: `${RAW_MAIL_PREFIX}${messageId}`, Body: raw }),
  );
  const event = {
    Records: [
      {
        eventSource: 'aws:ses',
        eventVersion: '1.0',
        ses: {
          mail: { timestamp: new Date().toISOString(), source, messageId, destination: recipients },
          receipt: { recipients, ...verdicts, action: { type: 'Lambda', invocationType: 'Event' } },
        },
      },
    ],
  } as unknown as SESEvent;
  return Object.assign(event, { rawKey: `${RAW_MAIL_PREFIX}${messageId}` });
}

/** The environment that makes a function's mail store this s3rver's bucket (as MAIL_BUCKET does deployed). */
const s3Environment = () => ({
  MAIL_BUCKET: BUCKET,
  AWS_ENDPOINT_URL_S3: endpoint,
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
  AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_REQUIRED',
  // The inbound queue: the SQS fake at the SDK's boundary (test/support/fake-sqs.ts).
  INBOUND_QUEUE_URL: sqs.queueUrl,
  AWS_ENDPOINT_URL_SQS: sqs.endpoint,
});

/**
 * The two deployed functions themselves (their table actions checked against their grants:
 * test/support/table-actions.ts): the inbound function routes the SES event, then the processing function takes
 * what it queued, as the event source mapping hands it a batch.
 */
async function deployed(event: SESEvent) {
  await withEnvironment(s3Environment(), () => routeFunction(event));
  const batch = sqs.takeEvent();
  return withEnvironment(s3Environment(), () => processFunction(batch));
}

/**
 * Their code path in this process, with this test's store: the event routed, each copy it queues processed at once
 * (receiveMail, as the processing function does); answers each account's outcome.
 */
async function receive(event: SESEvent) {
  const queued: QueuedMail[] = [];
  const routed = await receiveSesEvent(event, store, { send: async (mails) => void queued.push(...mails) });
  const processed = [];
  for (const { mail } of queued) processed.push(...(await receiveMail(mail, store)));
  return [...routed.decided, ...processed];
}

const compose = (options: ConstructorParameters<typeof MailComposer>[0]) =>
  new MailComposer(options).compile().build();

describe('the inbound function with the S3 store', () => {
  it('makes the SES mail a ticket, keeps its attachment in the bucket, and a retried event changes nothing', async () => {
    const domain = `s${randomBytes(5).toString('hex')}.test`;
    const account = await createTestAccount({ email: { addresses: [`support@${domain}`] } });
    const photo = randomBytes(2048);
    const raw = await compose({
      from: 'Rita <rita@customer.test>',
      to: `support@${domain}`,
      subject: 'Deployed path',
      messageId: `<${randomBytes(6).toString('hex')}@customer.test>`,
      text: 'Hello from SES.',
      attachments: [{ filename: 'photo.bin', content: photo }],
    });
    // Bcc: the envelope names the account, the headers do not; the rule's recipients are what counts.
    const event = await sesDelivers(raw, [`SUPPORT@${domain}`]);
    // The deployed functions themselves, their store named by MAIL_BUCKET and reached as the SDK's environment says.
    expect(await deployed(event)).toEqual({ batchItemFailures: [] });
    const [first] = await receive(event);
    expect(first).toMatchObject({
      outcome: 'new_ticket',
      from: 'rita@customer.test',
      subject: 'Deployed path',
    });
    const again = await receive(event);
    expect(again).toEqual([first]);

    const inboundId = inboundIdOf(event.Records[0] as SESEvent['Records'][number]);
    expect(first?.id).toBe(inboundId);
    expect(await store.size(attachmentKey(account.accountId, inboundId, 'att_0001'))).toBe(photo.length);

    const tickets = await gateway.call('GET', '/api/tickets', { key: account.apiKey });
    expect(tickets.body.data).toHaveLength(1);
    const ticket = first?.ticketUuid as string;
    const message = first?.messageId as string;
    const rawDownload = await rawMailOf(account.accountId, ticket, message, store);
    expect(rawDownload).toMatchObject({ kind: 'bytes', contentType: 'message/rfc822' });
    expect(rawDownload.kind === 'bytes' && rawDownload.bytes.equals(raw)).toBe(true);
    const file = await attachmentOf(account.accountId, ticket, message, 'att_0001', store);
    expect(file.kind === 'bytes' && file.bytes.equals(photo)).toBe(true);

    // Another account, the same ids: 404, whatever the store holds.
    const other = await createTestAccount();
    await expect(rawMailOf(other.accountId, ticket, message, store)).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('answers a file over the inline limit with a short-lived link that serves exactly it; a missing object is a 404', async () => {
    const domain = `s${randomBytes(5).toString('hex')}.test`;
    const account = await createTestAccount({ email: { addresses: [`support@${domain}`] } });
    const big = randomBytes(INLINE_MAX_BYTES + 1024);
    const event = await sesDelivers(
      await compose({
        from: 'rita@customer.test',
        to: `support@${domain}`,
        subject: 'Big',
        messageId: `<${randomBytes(6).toString('hex')}@customer.test>`,
        text: 'A large file.',
        attachments: [{ filename: 'big file ü.bin', content: big }],
      }),
      [`support@${domain}`],
    );
    const [outcome] = await receive(event);
    const ticket = outcome?.ticketUuid as string;
    const message = outcome?.messageId as string;
    const download = await attachmentOf(account.accountId, ticket, message, 'att_0001', store);
    if (download.kind !== 'link') throw new Error('expected a link');
    expect(download.url).toMatch(/X-Amz-Expires=300/);
    const fetched = await fetch(download.url);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-disposition')).toContain("filename*=UTF-8''big%20file%20%C3%BC.bin");
    expect(Buffer.from(await fetched.arrayBuffer()).equals(big)).toBe(true);

    // Through the API (the local gateway, the route's handler with the S3 store the environment names): a 303 to
    // such a link, as the OpenAPI document says (test/support/contract.ts checks the answer against it).
    const path = `/api/tickets/${ticket}/messages/${message}/attachments/att_0001`;
    const answer = await withEnvironment(s3Environment(), () =>
      fetch(`${gateway.baseUrl}${path}`, {
        headers: { Authorization: `Bearer ${account.apiKey}` },
        redirect: 'manual',
      }),
    );
    const text = await answer.text();
    checkAnswer({ method: 'GET', path, status: answer.status, headers: answer.headers, text });
    expect(answer.status).toBe(303);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const location = answer.headers.get('location') ?? '';
    expect(Buffer.from(await (await fetch(location)).arrayBuffer()).equals(big)).toBe(true);

    expect(await store.size('attachments/in_0000000000000000000000000/att_0001')).toBeUndefined();
    await expect(attachmentOf(account.accountId, ticket, message, 'att_0002', store)).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('a mail whose raw object is not there (the bucket unreachable, or a broken rule) throws, so Lambda retries it', async () => {
    const domain = `s${randomBytes(5).toString('hex')}.test`;
    await createTestAccount({ email: { addresses: [`support@${domain}`] } });
    const event = await sesDelivers(Buffer.from('x'), [`support@${domain}`]);
    const record = event.Records[0] as SESEvent['Records'][number];
    record.ses.mail.messageId = 'never-written';
    await expect(receive(event)).rejects.toThrow();
  });
});

/** Every object of the bucket whose bytes hold `bytes`, by key. */
async function objectsHolding(bytes: Buffer | string): Promise<string[]> {
  const found: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }));
    for (const { Key } of page.Contents ?? []) {
      if (Key && (await store.read(Key)).includes(bytes)) found.push(Key);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return found;
}

/** GET through the API (the local gateway) with the store the environment names: the bucket. */
const apiGet = (account: { apiKey: string }, path: string) =>
  withEnvironment(s3Environment(), async () => {
    const r = await fetch(`${gateway.baseUrl}${path}`, {
      headers: { Authorization: `Bearer ${account.apiKey}` },
    });
    return { status: r.status, bytes: Buffer.from(await r.arrayBuffer()) };
  });

describe('one SES delivery to two accounts', () => {
  it("is two mails in the bucket: every erasure and purge of one account leaves the other's raw mail and attachment byte for byte", async () => {
    const mailAccount = async () => {
      const address = `support@s${randomBytes(5).toString('hex')}.test`;
      return { ...(await createTestAccount({ email: { addresses: [address] } })), address };
    };
    const b = await mailAccount();
    const g = await mailAccount();
    const tag = randomBytes(4).toString('hex');
    const sender = `rita.${tag}@customer.test`;
    const copied = `carol.${tag}@customer.test`;
    const photo = randomBytes(3000);
    const event = await sesDelivers(
      await compose({
        from: `Rita <${sender}>`,
        to: [b.address, g.address],
        cc: copied,
        subject: `For both ${tag}`,
        messageId: `<${tag}@customer.test>`,
        text: 'Hello both.',
        attachments: [{ filename: 'photo.bin', content: photo }],
      }),
      [b.address, g.address],
      sender,
    );
    expect(await deployed(event)).toEqual({ batchItemFailures: [] });
    const records = await receive(event);
    const inboundId = inboundIdOf(event.Records[0] as SESEvent['Records'][number]);
    const of = async (account: { accountId: string }) => {
      const record = await getInbound(account.accountId, inboundId);
      return { ticket: String(record?.ticketUuid), message: String(record?.messageId) };
    };
    expect(records.map((r) => r.outcome)).toEqual(['new_ticket', 'new_ticket']);

    const inG = await of(g);
    const inB = await of(b);
    expect(inG.ticket).not.toBe(inB.ticket);
    const gPath = `/api/tickets/${inG.ticket}/messages/${inG.message}`;
    const keptRaw = await apiGet(g, `${gPath}/raw`);
    expect(keptRaw.status).toBe(200);
    expect(keptRaw.bytes.toString('latin1')).toContain(copied);
    const untouched = async (step: string) => {
      const raw = await rawMailOf(g.accountId, inG.ticket, inG.message, store);
      expect(raw.kind === 'bytes' && raw.bytes.equals(keptRaw.bytes), step).toBe(true);
      const file = await attachmentOf(g.accountId, inG.ticket, inG.message, 'att_0001', store);
      expect(file.kind === 'bytes' && file.bytes.equals(photo), step).toBe(true);
    };
    await untouched('received');

    const erase = async (email: string) => {
      const started = await gateway.call('POST', '/api/erasures', { key: b.apiKey, body: { email } });
      expect(started.status, started.text).toBe(202);
      await runErasure(b.accountId, started.body.data.id, { mail: s3MailEraser(BUCKET, client) });
      await untouched(`${email} erased in B`);
    };
    await erase(copied);
    const bRaw = await rawMailOf(b.accountId, inB.ticket, inB.message, store);
    expect(bRaw.kind === 'bytes' && bRaw.bytes.toString()).toBe('[erased]');
    await erase(g.address);
    await erase(sender);
    const bFile = await attachmentOf(b.accountId, inB.ticket, inB.message, 'att_0001', store);
    expect(bFile.kind === 'bytes' && bFile.bytes.toString()).toBe('[erased]');

    // B deletes its ticket and the trash's purge takes it: B's copy goes, G's stays.
    const deleted = await gateway.call('DELETE', `/api/tickets/${inB.ticket}`, { key: b.apiKey });
    expect(deleted.status, deleted.text).toBe(200);
    const late = Date.parse(deleted.body.data.purge_at) * 1000 + 1000;
    expect(await purgeOne(b.accountId, inB.ticket, late, s3MailEraser(BUCKET, client))).toBeDefined();
    await untouched('purged in B');
    const holding = await objectsHolding(photo);
    expect(holding).toHaveLength(1);
    expect(holding[0]).toContain(g.accountId);
    // Through the API too.
    expect(await apiGet(g, `${gPath}/raw`)).toEqual(keptRaw);
    expect(await apiGet(g, `${gPath}/attachments/att_0001`)).toEqual({ status: 200, bytes: photo });
    // SES's object, which held both accounts' mail, did not outlive the copies.
    expect(await store.size(event.rawKey)).toBeUndefined();
  });
});

describe("SES's verdicts and limits", () => {
  const oneAccount = async () => {
    const address = `support@s${randomBytes(5).toString('hex')}.test`;
    return { ...(await createTestAccount({ email: { addresses: [address] } })), address };
  };

  it('a virus verdict keeps the attachments out of reach and says so; a spam verdict is marked; a pass marks nothing', async () => {
    const account = await oneAccount();
    const payload = randomBytes(2000);
    const mail = (subject: string) =>
      compose({
        from: 'rita@customer.test',
        to: account.address,
        subject,
        messageId: `<${randomBytes(6).toString('hex')}@customer.test>`,
        text: 'See attached.',
        attachments: [{ filename: 'invoice.exe', content: payload }],
      });
    const failed = await sesDelivers(await mail('Flagged'), [account.address], 'rita@customer.test', {
      spamVerdict: { status: 'FAIL' },
      virusVerdict: { status: 'FAIL' },
    });
    const [flagged] = await receive(failed);
    expect(flagged?.outcome).toBe('new_ticket');
    const path = `/api/tickets/${flagged?.ticketUuid}/messages/${flagged?.messageId}`;
    const message = await gateway.call('GET', path, { key: account.apiKey });
    expect(message.body.data.email).toMatchObject({ spam: true, virus: true });
    // Listed (what was sent), never kept: its download is a 404, and no object holds its bytes.
    expect(message.body.data.attachments).toEqual([
      {
        id: 'att_0001',
        filename: 'invoice.exe',
        content_type: 'application/octet-stream',
        size: payload.length,
      },
    ]);
    await expect(
      attachmentOf(
        account.accountId,
        String(flagged?.ticketUuid),
        String(flagged?.messageId),
        'att_0001',
        store,
      ),
    ).rejects.toMatchObject({ statusCode: 404 });
    expect((await apiGet(account, `${path}/attachments/att_0001`)).status).toBe(404);
    expect(await objectsHolding(payload)).toEqual([]);

    const passed = await sesDelivers(await mail('Clean'), [account.address], 'rita@customer.test', {
      spamVerdict: { status: 'PASS' },
      virusVerdict: { status: 'PASS' },
    });
    const [clean] = await receive(passed);
    const cleanPath = `/api/tickets/${clean?.ticketUuid}/messages/${clean?.messageId}`;
    const cleanMessage = await gateway.call('GET', cleanPath, { key: account.apiKey });
    expect(cleanMessage.body.data.email).not.toHaveProperty('spam');
    expect(cleanMessage.body.data.email).not.toHaveProperty('virus');
    expect(await apiGet(account, `${cleanPath}/attachments/att_0001`)).toEqual({
      status: 200,
      bytes: payload,
    });
  });

  it('refuses a kept object over 26,214,400 bytes before parsing it: logged rejected with its size, nothing kept', async () => {
    const account = await oneAccount();
    const head = Buffer.from(
      `From: rita@customer.test\r\nTo: ${account.address}\r\nSubject: Too large\r\nMessage-ID: <${randomBytes(6).toString('hex')}@customer.test>\r\n\r\n`,
    );
    const size = 26_214_401;
    const raw = Buffer.concat([head, Buffer.alloc(size - head.length, 'a')]);
    const event = await sesDelivers(raw, [account.address]);
    expect(await deployed(event)).toEqual({ batchItemFailures: [] });
    const log = await gateway.call('GET', '/api/email/inbound', { key: account.apiKey });
    expect(log.body.data).toHaveLength(1);
    expect(log.body.data[0]).toMatchObject({
      outcome: 'rejected',
      from: null,
      subject: null,
      ticket_uuid: null,
    });
    expect(log.body.data[0].reason).toMatch(/26,?214,?401 bytes/);
    expect((await gateway.call('GET', '/api/tickets', { key: account.apiKey })).body.data).toEqual([]);
    // Refused for good: the event again answers the same, and the mail is not kept.
    expect((await receive(event))[0]).toMatchObject({ outcome: 'rejected' });
    expect(await store.size(event.rawKey)).toBeUndefined();
  }, 60_000);
});
