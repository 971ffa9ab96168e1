import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { PassThrough, type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
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
 * stores answer the same calls; nothing above this file knows which it has. Keys are paths in the store: a delivery
 * as the receiver kept it (`raw/<SES message id>`; the SMTP server's `incoming/<inbound id>.eml`), until each
 * account it was for has its own copy: `mail/<account>/<inbound id>.eml` (the raw mail) and
 * `attachments/<account>/<inbound id>/<attachment id>` (decisions.md: one delivery to several accounts is several
 * mails, and nothing one account does touches another's).
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
  /** Keeps a copy of the object `from` under `to`, durably (S3: CopyObject, server-side); throws if `from` is missing. */
  copy(from: string, to: string): Promise<void>;
  /** Removes the object under `key` (nothing there: nothing to do). */
  remove(key: string): Promise<void>;
  /**
   * A short-lived URL that serves the object itself with this file name and type, for objects too large for a
   * function's answer; undefined when the store has no such URL (the folder: the local gateway has no such limit).
   */
  link(key: string, as: { filename: string; contentType: string }): Promise<string | undefined>;
}

/**
 * Where SES writes each raw mail in the bucket (the receipt rule's S3 action: this prefix + SES's message id): one
 * object per delivery, removed once each account it was for has its copy (lib/email/copies.ts).
 */
export const RAW_MAIL_PREFIX = 'raw/';
/** Where each account keeps its own copy of a received mail's raw bytes (rawCopyKey). */
export const MAIL_COPIES_PREFIX = 'mail/';
/** Where attachments are kept, each account's under its own prefix (attachmentKey). */
export const ATTACHMENTS_PREFIX = 'attachments/';

/** The account's copy of a received mail's raw bytes. */
export const rawCopyKey = (accountId: string, inboundId: string) =>
  `${MAIL_COPIES_PREFIX}${accountId}/${inboundId}.eml`;

/** Where the account keeps the attachments of a received mail. */
export const attachmentsPrefix = (accountId: string, inboundId: string) =>
  `${ATTACHMENTS_PREFIX}${accountId}/${inboundId}/`;

/** Where the account keeps one attachment of a received mail. */
export const attachmentKey = (accountId: string, inboundId: string, attachmentId: string) =>
  `${attachmentsPrefix(accountId, inboundId)}${attachmentId}`;

/**
 * The attachments' place of a mail as its message or inbound entry recorded it: the account's own, or for mail kept
 * before accounts had their own copies (its raw key the delivery's, `raw/…`), the delivery's `attachments/<inbound id>/`.
 */
export const attachmentsPrefixOf = (accountId: string, inboundId: string, rawKey: string) =>
  rawKey.startsWith(MAIL_COPIES_PREFIX)
    ? attachmentsPrefix(accountId, inboundId)
    : `${ATTACHMENTS_PREFIX}${inboundId}/`;

/** The name of the local queue's record of one account's copy (infra/local/mail.ts: `pending/`, then `done/`). */
export const queueRecordName = (inboundId: string, accountId: string) => `${inboundId}.${accountId}.json`;

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
    async copy(from, to) {
      // On disk before it is named (a crash leaves no half copy under the name), as the SMTP server keeps mail.
      const path = pathOf(to);
      await mkdir(dirname(path), { recursive: true });
      await copyFile(pathOf(from), `${path}.tmp`);
      const file = await open(`${path}.tmp`, 'r+');
      try {
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(`${path}.tmp`, path);
    },
    remove: (key) => rm(pathOf(key), { force: true }),
    link: async () => undefined,
  };
}

/** The erasure's mark: what a file of the person's becomes (lib/erasures/redact.ts, ERASED, is the same text). */
export const ERASED_CONTENT = '[erased]';

/** Where an account's copies of received mail are kept, as the purge of their ticket reaches them (lib/data/purge.ts). */
export interface MailPurger {
  /**
   * Removes the account's copy of one received mail: its raw mail, its attachments and (the folder) the local
   * queue's records of it, which keep its envelope; answers the files removed. Another account's copy of the same
   * delivery is never touched.
   */
  purgeMail(accountId: string, inboundId: string): Promise<number>;
}

/** Where a person's raw mail and attachments are kept, as the erasure reaches them (lib/erasures/job.ts). */
export interface MailEraser extends MailPurger {
  /**
   * Replaces the account's raw mail (`rawKey`, as its inbound entry recorded it) and attachments of one received mail
   * with `[erased]`, and (the folder) removes its envelope's sender from the queue's records; answers the files changed.
   */
  eraseMail(accountId: string, inboundId: string, rawKey: string): Promise<number>;
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

/** The local queue's folders (infra/local/mail.ts): a copy's record waits in `pending/`, then stays a while in `done/`. */
const QUEUE_FOLDERS = ['pending', 'done'];

/**
 * The folder store's part of an erasure and a purge (lib/erasures/job.ts and lib/data/purge.ts, which call it through
 * MailEraser and MailPurger): an account's copy of a received mail (its raw file and attachments) replaced by
 * `[erased]` and its envelope's sender removed from the queue's records (`pending/`, `done/`), or all of them
 * removed; a sent mail's `.eml` file (`sent/<Message-ID>.eml`, the folder sender's name for it) replaced by
 * `[erased]`. Answers the files changed or removed.
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
  const filesIn = (folder: string) => readdir(join(dir, folder)).catch(() => [] as string[]);
  const records = (accountId: string, inboundId: string) =>
    QUEUE_FOLDERS.map((folder) => join(dir, folder, queueRecordName(inboundId, accountId)));
  /** Answers 1 when the file was removed, 0 when it is not there. */
  const removeFile = async (path: string) => {
    try {
      await rm(path);
      return 1;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return 0;
    }
  };
  return {
    eraseSent: (messageId) => replaceFile(join(dir, SENT_FOLDER, sentMailName(messageId))),
    eraseRaw: (rawKey) => replaceFile(join(dir, rawKey)),
    async eraseMail(accountId, inboundId, rawKey) {
      let changed = await replaceFile(join(dir, rawKey));
      const attachments = attachmentsPrefixOf(accountId, inboundId, rawKey);
      for (const name of await filesIn(attachments))
        changed += await replaceFile(join(dir, attachments, name));
      for (const path of records(accountId, inboundId)) {
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
    async purgeMail(accountId, inboundId) {
      // The queue's records first: a record left without its copy would be processed again and fail on it.
      let removed = 0;
      for (const path of records(accountId, inboundId)) removed += await removeFile(path);
      const attachments = attachmentsPrefix(accountId, inboundId);
      for (const name of await filesIn(attachments))
        removed += await removeFile(join(dir, attachments, name));
      await rm(join(dir, attachments), { recursive: true, force: true });
      return removed + (await removeFile(join(dir, rawCopyKey(accountId, inboundId))));
    },
  };
}

/**
 * The S3 store's part of an erasure and a purge: an account's copy of a received mail (its raw object and its
 * attachments, one ListObjectsV2 of the mail's own attachments' prefix) replaced by `[erased]`, or removed. Sent mail
 * has no copy in the bucket (SES sends it; the service keeps none): `eraseSent` answers 0. An object already erased
 * or gone is left alone.
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
  /** Each object under the prefix, through `act`; answers the sum of what it answers. */
  const eachUnder = async (prefix: string, act: (key: string) => Promise<number>) => {
    let total = 0;
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) if (object.Key) total += await act(object.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return total;
  };
  const remove = async (key: string) => {
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    return 1;
  };
  return {
    async eraseMail(accountId, inboundId, rawKey) {
      return (
        (await replace(rawKey)) +
        (await eachUnder(attachmentsPrefixOf(accountId, inboundId, rawKey), replace))
      );
    },
    eraseRaw: (rawKey) => replace(rawKey),
    eraseSent: async () => 0,
    // Listed, not read (the purge's grant is ListBucket and DeleteObject): the raw copy by its own key as a prefix.
    purgeMail: async (accountId, inboundId) =>
      (await eachUnder(attachmentsPrefix(accountId, inboundId), remove)) +
      (await eachUnder(rawCopyKey(accountId, inboundId), remove)),
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

/** The purger of the store the environment names; none when no store is named (no mail is kept to purge). */
export function mailPurger(): MailPurger | undefined {
  return process.env[MAIL_BUCKET_VARIABLE] || process.env[MAIL_DIR_VARIABLE] ? mailEraser() : undefined;
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
    async copy(from, to) {
      const source = `${bucket}/${from.split('/').map(encodeURIComponent).join('/')}`;
      await client.send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: source }));
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
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
