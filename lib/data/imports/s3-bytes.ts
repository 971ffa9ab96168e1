import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ByteSource } from '#lib/imports/byte-source.ts';

/**
 * An uploaded object in S3 read by range (an ndjson import's upload, deployed): `HeadObject` for its size, and one
 * `GetObject` with `Range: bytes=a-b` (both ends inclusive, RFC 9110) a read, so a page of the import costs a few
 * ranged GETs whatever the object's size.
 */
export function s3Bytes(bucket: string, key: string, client: S3Client = new S3Client({})): ByteSource {
  return {
    async size() {
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return head.ContentLength ?? 0;
    },
    async read(offset, length) {
      if (length <= 0) return new Uint8Array(0);
      const { Body } = await client.send(
        new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${offset}-${offset + length - 1}` }),
      );
      if (!Body) return new Uint8Array(0);
      return Body.transformToByteArray();
    },
  };
}
