import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentDisposition, folderMailStore, mailStore } from '#lib/data/mail-store.ts';

/** The folder mail store and the download's file name (lib/data/mail-store.ts); the S3 store: test/api/email-inbound-s3.test.ts. */
describe('the folder mail store', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'deskpipe-store-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('keeps an attachment streamed, answers its size, reads it back; a missing key has no size', async () => {
    const store = folderMailStore(dir);
    const bytes = Buffer.from([0, 1, 2, 3, 255]);
    expect(await store.putAttachment('attachments/in_1/att_0001', Readable.from([bytes, bytes]))).toBe(10);
    expect(await store.size('attachments/in_1/att_0001')).toBe(10);
    expect((await store.read('attachments/in_1/att_0001')).equals(Buffer.concat([bytes, bytes]))).toBe(true);
    expect(await store.size('attachments/in_1/att_0002')).toBeUndefined();
    expect(
      await store.link('attachments/in_1/att_0001', { filename: 'a', contentType: 'x/y' }),
    ).toBeUndefined();
  });

  it('refuses a key that leaves its folder', async () => {
    const store = folderMailStore(dir);
    await expect(store.size('../outside')).rejects.toThrow(/outside the folder/);
    expect(() => store.openRaw('raw/../../etc/passwd')).toThrow(/outside the folder/);
  });

  it('is the store the environment names, the bucket first', async () => {
    const names = ['MAIL_BUCKET', 'MAIL_DIR', 'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'];
    const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
    try {
      for (const n of names) delete process.env[n];
      expect(() => mailStore()).toThrow(/no mail store/);
      process.env.MAIL_DIR = dir;
      expect(
        await mailStore().link('raw/x.eml', { filename: 'x.eml', contentType: 'message/rfc822' }),
      ).toBeUndefined();
      expect(mailStore()).toBe(mailStore());
      // The bucket wins over the folder: a presigned link to the object (made offline, no request sent).
      Object.assign(process.env, {
        MAIL_BUCKET: 'deskpipe-unit-mail',
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'secret',
      });
      const url = new URL(
        (await mailStore().link('raw/x.eml', { filename: 'x.eml', contentType: 'message/rfc822' })) ?? '',
      );
      expect(url.hostname).toBe('deskpipe-unit-mail.s3.eu-west-1.amazonaws.com');
      expect(url.pathname).toBe('/raw/x.eml');
      expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
      expect(url.searchParams.get('response-content-type')).toBe('message/rfc822');
    } finally {
      for (const n of names) {
        if (saved[n] === undefined) delete process.env[n];
        else process.env[n] = saved[n];
      }
    }
  });
});

describe('Content-Disposition of a download', () => {
  it('names the file in ASCII (quotes, controls and non-ASCII replaced) and whole in filename*', () => {
    expect(contentDisposition('report.pdf')).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
    expect(contentDisposition('a "b"\r\n.txt')).toBe(
      `attachment; filename="a _b___.txt"; filename*=UTF-8''a%20%22b%22%0D%0A.txt`,
    );
    expect(contentDisposition('Übersicht €.pdf')).toBe(
      `attachment; filename="_bersicht _.pdf"; filename*=UTF-8''%C3%9Cbersicht%20%E2%82%AC.pdf`,
    );
    expect(contentDisposition('')).toBe(`attachment; filename="download"; filename*=UTF-8''`);
  });
});
