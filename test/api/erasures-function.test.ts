import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#functions/erasures.ts';
import { ledgerEntries, putLedgerEntry } from '#lib/data/erasures.ts';
import { erasureKeys } from '#lib/data/keys.ts';
import { MAIL_DIR_VARIABLE, s3MailEraser } from '#lib/data/mail-store.ts';
import { batchPutAll, getItem, queryAll, tableName } from '#lib/data/store/client.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { type LocalS3, startLocalS3 } from '#test/support/s3.ts';

/**
 * The erasure runner deployed (functions/erasures.ts): the scheduled function runs npm start's erasure passes until
 * no erasure has steps to go and returns (its DynamoDB actions checked against its grant: test/support/table-actions.ts
 * wraps its handler as `erasures`); and its mail eraser over S3 (s3MailEraser) against a real S3 protocol server
 * (s3rver on 127.0.0.1): a mail's raw object and its attachments become `[erased]`, another mail's stay.
 */
const gateway = useGateway();
const BUCKET = 'deskpipe-test-erase';
let s3: LocalS3;
let client: S3Client;

beforeAll(async () => {
  s3 = await startLocalS3(BUCKET);
  client = s3.client;
  process.env[MAIL_DIR_VARIABLE] = join(s3.dir, 'mail');
});
afterAll(async () => {
  delete process.env[MAIL_DIR_VARIABLE];
  await s3?.stop();
});

const put = (key: string, body: string) =>
  client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
const read = async (key: string) =>
  (await (await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString()) ??
  '';

describe('the erasure function', () => {
  it("erases an account's copy of a mail in the bucket: its raw object and attachments, once; another mail and another account's copy untouched; a purge removes it", async () => {
    await Promise.all([
      put('mail/acc1/m1.eml', 'From: zephyrine@erase.test\r\n\r\nHello'),
      put('attachments/acc1/m1/a1', 'passport scan'),
      put('attachments/acc1/m1/a2', 'invoice'),
      put('mail/acc2/m1.eml', 'From: zephyrine@erase.test\r\n\r\nHello'),
      put('attachments/acc2/m1/a1', 'passport scan'),
      put('mail/acc1/m2.eml', 'From: control@erase.test\r\n\r\nHi'),
      put('attachments/acc1/m2/a1', 'control file'),
    ]);
    const eraser = s3MailEraser(BUCKET, client);
    expect(await eraser.eraseMail('acc1', 'm1', 'mail/acc1/m1.eml')).toBe(3);
    expect(await eraser.eraseMail('acc1', 'm1', 'mail/acc1/m1.eml')).toBe(0);
    expect(await eraser.eraseMail('acc1', 'gone', 'mail/acc1/gone.eml')).toBe(0);
    expect(await eraser.eraseSent('any@desk.test')).toBe(0);
    expect(
      await Promise.all(['mail/acc1/m1.eml', 'attachments/acc1/m1/a1', 'attachments/acc1/m1/a2'].map(read)),
    ).toEqual(['[erased]', '[erased]', '[erased]']);
    expect(await read('mail/acc2/m1.eml')).toContain('zephyrine@erase.test');
    expect(await read('attachments/acc2/m1/a1')).toBe('passport scan');
    expect(await read('mail/acc1/m2.eml')).toContain('control@erase.test');
    expect(await read('attachments/acc1/m2/a1')).toBe('control file');
    // A mail the person was copied on: its raw object only (its attachments are its sender's), once.
    await Promise.all([
      put('mail/acc1/m3.eml', 'Cc: zephyrine@erase.test\r\n\r\nHi'),
      put('attachments/acc1/m3/a1', 'kept'),
    ]);
    expect(await eraser.eraseRaw('mail/acc1/m3.eml')).toBe(1);
    expect(await eraser.eraseRaw('mail/acc1/m3.eml')).toBe(0);
    expect(await read('mail/acc1/m3.eml')).toBe('[erased]');
    expect(await read('attachments/acc1/m3/a1')).toBe('kept');
    // The purge of the account's copy: its raw object and attachments, nothing of the other account's.
    expect(await eraser.purgeMail('acc1', 'm1')).toBe(3);
    expect(await eraser.purgeMail('acc1', 'm1')).toBe(0);
    await expect(read('mail/acc1/m1.eml')).rejects.toThrow();
    await expect(read('attachments/acc1/m1/a1')).rejects.toThrow();
    expect(await read('mail/acc2/m1.eml')).toContain('zephyrine@erase.test');
    expect(await read('attachments/acc2/m1/a1')).toBe('passport scan');
    expect(await read('mail/acc1/m2.eml')).toContain('control@erase.test');
  });

  it('runs the running erasures to completion, then returns at once; nothing without time left', async () => {
    const account = await createTestAccount();
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key: account.apiKey, ...(body === undefined ? {} : { body }) });
    const email = 'ottilie.fernsby@erase-function.test';
    const ticket = (
      await call('POST', '/api/tickets', {
        subject: 'Ottilie here',
        description: 'Hi',
        requester_name: 'Ottilie Fernsby',
        requester_email: email,
      })
    ).body.ticket.uuid as string;
    const started = (await call('POST', '/api/erasures', { email })).body.data.id as string;

    const late = { getRemainingTimeInMillis: () => 10_000, awsRequestId: 'erase-late' } as Context;
    await handler(undefined, late);
    expect((await call('GET', `/api/erasures/${started}`)).body.data.status).toBe('running');

    const context = { getRemainingTimeInMillis: () => 110_000, awsRequestId: 'erase-test' } as Context;
    const begun = Date.now();
    await handler(undefined, context);
    expect(Date.now() - begun).toBeLessThan(20_000);
    const done = (await call('GET', `/api/erasures/${started}`)).body.data;
    expect(done).toMatchObject({ status: 'completed', counts: { tickets: 1 } });
    const erased = (await call('GET', `/api/tickets/${ticket}`)).body.data;
    expect(erased.requester).toMatchObject({ email: null, erased: true });
    expect(erased.subject).toBe('[erased] here');
  });

  it("runs the erasures when the ledger's move fails: the move is logged and left to the next run", async () => {
    const account = await createTestAccount();
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key: account.apiKey, ...(body === undefined ? {} : { body }) });
    const email = 'wilhelmina.tusk@erase-function.test';
    await call('POST', '/api/tickets', { subject: 'Hello', description: 'Hi', requester_email: email });
    const started = (await call('POST', '/api/erasures', { email })).body.data.id as string;
    const context = { getRemainingTimeInMillis: () => 110_000, awsRequestId: 'ledger-fails' } as Context;
    // The run's first Query is the move's read of the legacy partition.
    const { operations } = await withFault({ operation: 'Query', mode: 'lost-request' }, () =>
      handler(undefined, context),
    );
    expect(operations[0]).toBe('Query');
    expect((await call('GET', `/api/erasures/${started}`)).body.data.status).toBe('completed');
  });

  it("moves the ledger's legacy entries (one partition of every account's) to their accounts' keys; the replay's list reads both, each entry once", async () => {
    const [a, b] = [await createTestAccount(), await createTestAccount()];
    const legacy = (accountId: string, id: string) => ({
      pk: erasureKeys.legacyLedgerPartition,
      sk: `${accountId}#${id}`,
      type: 'erasure_ledger',
      accountId,
      id,
      hash: `hash-${id}`,
      completedAt: '2026-11-30T10:00:00.000000Z',
    });
    await batchPutAll([legacy(a.accountId, 'ers_legacy1'), legacy(b.accountId, 'ers_legacy2')]);
    await putLedgerEntry({ accountId: a.accountId, id: 'ers_new1', hash: 'hash-ers_new1' });
    const listed = async () =>
      (await ledgerEntries())
        .filter((e) => e.accountId === a.accountId || e.accountId === b.accountId)
        .map((e) => `${e.id} ${e.hash}`)
        .sort();
    const every = ['ers_legacy1 hash-ers_legacy1', 'ers_legacy2 hash-ers_legacy2', 'ers_new1 hash-ers_new1'];
    expect(await listed()).toEqual(every);

    await handler(undefined, { getRemainingTimeInMillis: () => 110_000, awsRequestId: 'ledger' } as Context);
    const left = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': erasureKeys.legacyLedgerPartition },
    });
    expect(left).toEqual([]);
    const moved = erasureKeys.ledger(b.accountId, 'ers_legacy2');
    expect(await getItem({ pk: moved.pk, sk: moved.sk })).toMatchObject({
      ...moved,
      hash: 'hash-ers_legacy2',
      completedAt: '2026-11-30T10:00:00.000000Z',
    });
    expect(await listed()).toEqual(every);
  });
});
