import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { PassThrough, type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

/**
 * Where raw mail and attachments are kept (docs/email.md, "Local and deployed side by side"): a folder under
 * `npm start` and in tests, an S3 bucket deployed (the stage's mail bucket, where SES writes each raw mail). Both
 * stores answer the same calls; nothing above this file knows which it has. Keys are paths in the store:
 * `raw/<id>` (the raw mail) and `attachments/<inbound id>/<attachment id>`.
 */
export interface MailObjectStore {
  /** The raw mail kept under `rawKey`, as a stream (a missing key: the stream errors). */
  openRaw(rawKey: string): Readable;
  /** Keeps an attachment's bytes (streamed, never whole in memory) under `key`; answers its size in bytes. */
  putAttachment(key: string, content: Readable): Promise<number>;
  /** The object's size in bytes, or undefined when nothing is kept under `key` (never kept, or expired). */
  size(key: string): Promise<number | undefined>;
  /** The whole object (callers check its size first). */
  read(key: string): Promise<Buffer>;
  /**
   * A short-lived URL that serves the object itself with this file name and type, for objects too large for a
   * function's answer; undefined when the store has no such URL (the folder: the local gateway has no such limit).
   */
  link(key: string, as: { filename: string; contentType: string }): Promise<string | undefined>;
}

/** Where SES writes each raw mail in the bucket (the receipt rule's S3 action: this prefix + SES's message id). */
export const RAW_MAIL_PREFIX = 'raw/';
/** Where attachments are kept (lib/email/receive.ts, attachmentKey). */
export const ATTACHMENTS_PREFIX = 'attachments/';

/** Where one attachment of a received mail is kept. */
export const attachmentKey = (inboundId: string, attachmentId: string) =>
  `${ATTACHMENTS_PREFIX}${inboundId}/${attachmentId}`;

/** How long a link to a large object works. */
export const LINK_SECONDS = 300;

const counting = () => {
  const counter = {
    size: 0,
    stream: new Transform({
      transform(chunk: Buffer, _encoding, done) {
        counter.size += chunk.length;
        done(null, chunk);
      },
    }),
  };
  return counter;
};

/** The folder store: `raw/<id>.eml` and `attachments/<inbound id>/<attachment id>` under `dir`. */
export function folderMailStore(dir: string): MailObjectStore {
  const root = resolve(dir);
  // A key is the store's own (never a request's text), but a path outside the folder is refused all the same.
  const pathOf = (key: string) => {
    const path = resolve(root, key);
    if (!path.startsWith(`${root}${sep}`)) throw new Error(`mail store key outside the folder: ${key}`);
    return path;
  };
  return {
    openRaw: (rawKey) => createReadStream(pathOf(rawKey)),
    async putAttachment(key, content) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      const count = counting();
      await pipeline(content, count.stream, createWriteStream(path));
      return count.size;
    },
    async size(key) {
      try {
        return (await stat(pathOf(key))).size;
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async read(key) {
      const chunks: Buffer[] = [];
      for await (const chunk of createReadStream(pathOf(key))) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    link: async () => undefined,
  };
}

/** The erasure's mark: what a file of the person's becomes (lib/erasures/redact.ts, ERASED, is the same text). */
export const ERASED_CONTENT = '[erased]';

/** Where a person's raw mail and attachments are kept, as the erasure reaches them (lib/erasures/job.ts). */
export interface MailEraser {
  /** Replaces the raw mail and the attachments of one received mail with `[erased]`; answers the files changed. */
  eraseMail(inboundId: string, rawKey: string): Promise<number>;
  /**
   * Replaces only the raw mail of one received mail with `[erased]` (a mail the person was sent or copied: its
   * headers name them; its attachments are its sender's); answers the files changed (1 or 0).
   */
  eraseRaw(rawKey: string): Promise<number>;
  /** Replaces the kept copy of one mail the service sent (by its Message-ID) with `[erased]`; answers 1 or 0. */
  eraseSent(messageId: string): Promise<number>;
}

/** Where the folder sender keeps a sent mail (lib/email/senders.ts): `sent/` + this, found again by its Message-ID. */
export const sentMailName = (messageId: string) => `${messageId.replace(/[^A-Za-z0-9._@+=-]/g, '_')}.eml`;
export const SENT_FOLDER = 'sent';

/**
 * The folder store's part of an erasure (lib/erasures/job.ts, which calls it through MailEraser): a received mail's raw file and its attachments
 * replaced by `[erased]`, and its envelope's sender (in `done/`, `pending/`) removed; a sent mail's `.eml` file
 * (`sent/<Message-ID>.eml`, the folder sender's name for it) replaced by `[erased]`. Answers the files changed.
 */
export function folderMailEraser(dir: string): MailEraser {
  /** Answers 1 when the file was replaced, 0 when it was already erased or is not there. */
  const replaceFile = async (path: string) => {
    try {
      if ((await readFile(path, 'utf8')) === ERASED_CONTENT) return 0;
      await writeFile(path, ERASED_CONTENT);
      return 1;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return 0;
    }
  };
  return {
    eraseSent: (messageId) => replaceFile(join(dir, SENT_FOLDER, sentMailName(messageId))),
    eraseRaw: (rawKey) => replaceFile(join(dir, rawKey)),
    async eraseMail(inboundId, rawKey) {
      let changed = 0;
      const replace = async (path: string) => {
        changed += await replaceFile(path);
      };
      await replace(join(dir, rawKey));
      const attachments = join(dir, 'attachments', inboundId);
      const names = await readdir(attachments).catch(() => [] as string[]);
      for (const name of names) await replace(join(attachments, name));
      for (const folder of ['done', 'pending']) {
        const path = join(dir, folder, `${inboundId}.json`);
        try {
          const envelope = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
          if (envelope.mailFrom === null) continue;
          await writeFile(path, JSON.stringify({ ...envelope, mailFrom: null }));
          changed++;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
      return changed;
    },
  };
}

/**
 * The S3 store's part of an erasure: a received mail's raw object and its attachments (one ListObjectsV2 of the
 * mail's own `attachments/<inbound id>/` prefix) replaced by `[erased]`. Sent mail has no copy in the bucket
 * (SES sends it; the service keeps none): `eraseSent` answers 0. An object already erased or gone is left alone.
 */
export function s3MailEraser(bucket: string, client: S3Client = new S3Client({})): MailEraser {
  const erasedSize = Buffer.byteLength(ERASED_CONTENT);
  const replace = async (key: string) => {
    let size: number;
    try {
      size = (await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ContentLength ?? 0;
    } catch (error) {
      if (isMissing(error)) return 0;
      throw error;
    }
    if (size === erasedSize) {
      const { Body } = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const text = await (Body as { transformToString(): Promise<string> }).transformToString();
      if (text === ERASED_CONTENT) return 0;
    }
    await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: ERASED_CONTENT, ContentType: 'text/plain' }),
    );
    return 1;
  };
  return {
    async eraseMail(inboundId, rawKey) {
      let changed = await replace(rawKey);
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: `${ATTACHMENTS_PREFIX}${inboundId}/`,
            ContinuationToken: token,
          }),
        );
        for (const object of page.Contents ?? []) if (object.Key) changed += await replace(object.Key);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return changed;
    },
    eraseRaw: (rawKey) => replace(rawKey),
    eraseSent: async () => 0,
  };
}

/** The eraser of the store the environment names (as mailStore()). */
export function mailEraser(): MailEraser {
  const bucket = process.env[MAIL_BUCKET_VARIABLE];
  const dir = process.env[MAIL_DIR_VARIABLE];
  if (bucket) return s3MailEraser(bucket);
  if (dir) return folderMailEraser(dir);
  throw new Error(`Neither ${MAIL_BUCKET_VARIABLE} nor ${MAIL_DIR_VARIABLE} is set: no mail store`);
}

const isMissing = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
};

/**
 * The S3 store: the stage's mail bucket (encrypted at rest by the bucket's default, objects expired by its
 * lifecycle). Attachments are uploaded as they stream out of the parser (lib-storage's Upload: multipart in 5 MiB
 * parts, so memory stays bounded whatever the attachment's size and its length need not be known first).
 */
export function s3MailStore(bucket: string, client: S3Client = new S3Client({})): MailObjectStore {
  return {
    openRaw(rawKey) {
      const out = new PassThrough();
      client.send(new GetObjectCommand({ Bucket: bucket, Key: rawKey })).then(
        ({ Body }) => {
          const body = Body as Readable;
          body.on('error', (error) => out.destroy(error));
          body.pipe(out);
        },
        (error: unknown) => out.destroy(error as Error),
      );
      return out;
    },
    async putAttachment(key, content) {
      const count = counting();
      const body = content.pipe(count.stream);
      content.on('error', (error) => body.destroy(error));
      await new Upload({ client, params: { Bucket: bucket, Key: key, Body: body } }).done();
      return count.size;
    },
    async size(key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return head.ContentLength ?? 0;
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },
    async read(key) {
      const { Body } = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(
        await (Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
      );
    },
    link: (key, as) =>
      getSignedUrl(
        client,
        new GetObjectCommand({
          Bucket: bucket,
          Key: key,
          ResponseContentType: as.contentType,
          ResponseContentDisposition: contentDisposition(as.filename),
        }),
        { expiresIn: LINK_SECONDS },
      ),
  };
}

/** `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266): a safe ASCII name, and the real one encoded. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_').slice(0, 200) || 'download';
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename.slice(0, 200))}`;
}

/**
 * The variables that name the store: MAIL_BUCKET (deployed: the stack sets it on the functions that read or write
 * mail), else MAIL_DIR (`npm start` and tests set it to the folder its SMTP server keeps mail in).
 */
export const MAIL_BUCKET_VARIABLE = 'MAIL_BUCKET';
export const MAIL_DIR_VARIABLE = 'MAIL_DIR';

let current: { name: string; store: MailObjectStore } | undefined;

/** The store the environment names (one per process, made again if the environment changes, as in tests). */
export function mailStore(): MailObjectStore {
  const bucket = process.env[MAIL_BUCKET_VARIABLE];
  const dir = process.env[MAIL_DIR_VARIABLE];
  const name = bucket ? `s3:${bucket}` : dir ? `dir:${dir}` : undefined;
  if (!name)
    throw new Error(`Neither ${MAIL_BUCKET_VARIABLE} nor ${MAIL_DIR_VARIABLE} is set: no mail store`);
  if (current?.name !== name) {
    current = { name, store: bucket ? s3MailStore(bucket) : folderMailStore(join(dir as string)) };
  }
  return current.store;
}
