import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { attachmentsPrefix, attachmentsPrefixOf, rawCopyKey } from './layout.ts';
import { isMissing } from './s3.ts';
import { ERASED_CONTENT, type MailEraser } from './types.ts';

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
