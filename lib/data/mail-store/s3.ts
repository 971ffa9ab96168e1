import { PassThrough, type Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { counting } from './counting.ts';
import type { MailObjectStore } from './types.ts';

/** How long a link to a large object works. */
export const LINK_SECONDS = 300;

/** Whether S3 answered that nothing is kept under the key. */
export const isMissing = (error: unknown) => {
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
