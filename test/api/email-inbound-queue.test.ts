import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context, SESEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as routeFunction } from '#functions/email-inbound.ts';
import { handler as processFunction } from '#functions/email-inbound-queue.ts';
import { getInbound } from '#lib/data/mail/inbound.ts';
import { folderMailStore, RAW_MAIL_PREFIX, rawCopyKey } from '#lib/data/mail-store.ts';
import { queuedMailOf } from '#lib/email/inbound-queue.ts';
import { inboundIdOf } from '#lib/email/ses-receipt.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { withEnvironment } from '#test/support/environment.ts';
import { type FakeSqs, startFakeSqs } from '#test/support/fake-sqs.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The deployed inbound path in two functions (docs/email.md, "One account's share"): the inbound function SES
 * invokes only routes (one message per account, its group the account, on the inbound fair queue), and the
 * processing function takes a batch of that queue. The store is DynamoDB Local and a mail folder (the folder store
 * answers as the S3 one: email-inbound-s3.test.ts runs this path on an S3 emulator); SQS is a small fake at the
 * SDK's boundary (test/support/fake-sqs.ts: no SQS runs here), whose kept messages are handed to the processing
 * function as the event source mapping hands a batch.
 */
const gateway = useGateway();
let dir: string;
let sqs: FakeSqs;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-inbound-queue-'));
  await mkdir(join(dir, 'raw'), { recursive: true });
  sqs = await startFakeSqs();
});
afterAll(async () => {
  await sqs?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The functions' environment: the mail folder as their store, the fake as SQS. */
const environment = () => ({
  MAIL_DIR: dir,
  INBOUND_QUEUE_URL: sqs.queueUrl,
  AWS_ENDPOINT_URL_SQS: sqs.endpoint,
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'FAKE',
  AWS_SECRET_ACCESS_KEY: 'FAKE',
});
const route = (event: SESEvent) => withEnvironment(environment(), () => routeFunction(event));
const processBatch = (event = sqs.takeEvent()) =>
  withEnvironment(environment(), () => processFunction(event));

/** `n` accounts, a mail delivered to each and routed: their queued messages as one batch. */
async function routedBatch(n: number) {
  const accounts = [];
  const mails = [];
  for (let i = 0; i < n; i++) {
    const account = await mailAccount();
    const mail = await sesDelivers([account.address]);
    await route(mail.event);
    accounts.push(account);
    mails.push(mail);
  }
  const batch = sqs.takeEvent();
  expect(batch.Records).toHaveLength(n);
  return { accounts, mails, batch };
}

async function mailAccount() {
  const address = `support@q${randomBytes(5).toString('hex')}.test`;
  return { ...(await createTestAccount({ email: { addresses: [address] } })), address };
}

/** What SES does for one mail: its raw bytes at `raw/<message id>`, then the event of the rule's Lambda action. */
async function sesDelivers(recipients: string[], subject = 'Hello') {
  const messageId = randomBytes(16).toString('hex');
  const raw = `From: rita@customer.test\r\nTo: ${recipients.join(', ')}\r\nSubject: ${subject}\r\nMessage-ID: <${messageId}@customer.test>\r\n\r\nbody\r\n`;
  await writeFile(join(dir, `${RAW_MAIL_PREFIX}${messageId}`), raw);
  const mail = {
    timestamp: new Date().toISOString(),
    source: 'rita@customer.test',
    messageId,
    destination: recipients,
  };
  const record = { eventSource: 'aws:ses', eventVersion: '1.0', ses: { mail, receipt: { recipients } } };
  const event = { Records: [record] } as unknown as SESEvent;
  return { event, inboundId: inboundIdOf(event.Records[0] as SESEvent['Records'][number]), messageId };
}

describe('the inbound function routes', () => {
  it("queues one message per account, its group the account, each naming that account's own copy; SES's object is removed and nothing is processed yet", async () => {
    const [a, b] = [await mailAccount(), await mailAccount()];
    const { event, inboundId, messageId } = await sesDelivers([
      a.address,
      b.address,
      'nobody@elsewhere.test',
    ]);
    const before = sqs.sent.length;
    await route(event);
    const sent = sqs.sent.slice(before);
    expect(sent.map((m) => m.groupId)).toEqual([a.accountId, b.accountId]);
    for (const [message, account] of [
      [sent[0], a],
      [sent[1], b],
    ] as const) {
      expect(queuedMailOf(String(message?.body))).toMatchObject({
        inboundId,
        rawKey: rawCopyKey(account.accountId, inboundId),
        recipients: [account.address],
        mailFrom: 'rita@customer.test',
      });
    }
    const store = folderMailStore(dir);
    expect(await store.size(`${RAW_MAIL_PREFIX}${messageId}`)).toBeUndefined();
    expect(await store.size(rawCopyKey(a.accountId, inboundId))).toBeGreaterThan(0);
    expect(await getInbound(a.accountId, inboundId)).toBeUndefined();

    // The processing function makes each a ticket; the same event again (Lambda's retry) queues nothing more.
    expect(await processBatch()).toEqual({ batchItemFailures: [] });
    expect(await getInbound(a.accountId, inboundId)).toMatchObject({ outcome: 'new_ticket' });
    expect(await getInbound(b.accountId, inboundId)).toMatchObject({ outcome: 'new_ticket' });
    const after = sqs.sent.length;
    await route(event);
    expect(sqs.sent.length).toBe(after);
  });

  it('a queue refusing a message fails the routing, which is tried again whole: every account gets its mail once', async () => {
    const [a, b] = [await mailAccount(), await mailAccount()];
    const { event, inboundId } = await sesDelivers([a.address, b.address]);
    sqs.refuseNext(1);
    await expect(route(event)).rejects.toThrow(/inbound queue refused 1 message/);
    // Lambda's retry of the invocation: SES's object is gone, the copies are made, both are queued (b twice).
    await route(event);
    const event2 = sqs.takeEvent();
    expect(event2.Records.map((r) => r.attributes.MessageGroupId).sort()).toEqual(
      [b.accountId, a.accountId, b.accountId].sort(),
    );
    expect(await processBatch(event2)).toEqual({ batchItemFailures: [] });
    for (const account of [a, b]) {
      expect(await getInbound(account.accountId, inboundId)).toMatchObject({ outcome: 'new_ticket' });
      const tickets = await gateway.call('GET', '/api/tickets', { key: account.apiKey });
      expect(tickets.body.data).toHaveLength(1);
    }
  });
});

describe('the processing function', () => {
  it('reports only the mail whose store failed: the others of its batch are processed, and it is processed when received again', async () => {
    const { accounts, mails, batch } = await routedBatch(3);
    // The first mail's commit fails (the store lost the request); the batch goes on with the other two.
    const { result } = await withFault({ operation: 'TransactWriteItems', mode: 'lost-request' }, () =>
      processBatch(batch),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: batch.Records[0]?.messageId }] });
    expect(await getInbound(accounts[0]?.accountId as string, mails[0]?.inboundId as string)).toBeUndefined();
    for (const i of [1, 2]) {
      expect(await getInbound(accounts[i]?.accountId as string, mails[i]?.inboundId as string)).toMatchObject(
        {
          outcome: 'new_ticket',
        },
      );
    }
    // Received again after its visibility timeout: only the failed one, which now opens its ticket.
    const again = { Records: batch.Records.slice(0, 1) };
    expect(await processBatch(again)).toEqual({ batchItemFailures: [] });
    expect(await getInbound(accounts[0]?.accountId as string, mails[0]?.inboundId as string)).toMatchObject({
      outcome: 'new_ticket',
    });
  });

  it('begins no mail with too little of the function left: the rest of the batch is reported, to be received again', async () => {
    const { accounts, mails, batch } = await routedBatch(2);
    // 20 s left for the first mail, then 10 s: the second is not begun.
    const left = [20_000, 10_000];
    const context = { getRemainingTimeInMillis: () => left.shift() ?? 0 } as Context;
    const answer = await withEnvironment(environment(), () => processFunction(batch, context));
    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: batch.Records[1]?.messageId }] });
    expect(await getInbound(accounts[0]?.accountId as string, mails[0]?.inboundId as string)).toMatchObject({
      outcome: 'new_ticket',
    });
    expect(await getInbound(accounts[1]?.accountId as string, mails[1]?.inboundId as string)).toBeUndefined();
  });

  it('takes a message that is no mail off the queue (nothing could ever process it), and reports nothing', async () => {
    const event = { Records: [{ messageId: 'm-1', body: 'not json', attributes: {} }] } as never;
    expect(await processBatch(event)).toEqual({ batchItemFailures: [] });
  });
});
