import { createWriteStream } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ByteSource } from '#lib/imports/byte-source.ts';
import { fileBytes } from './file-bytes.ts';
import { s3Bytes } from './s3-bytes.ts';

/**
 * Where an ndjson job's file is kept: deployed, the object `imports/<account>/<id>.ndjson` of the bucket
 * IMPORT_UPLOAD_BUCKET names (read by range: ./s3-bytes.ts); locally (`npm start`, tests), the same name under the
 * folder IMPORT_UPLOAD_DIR names (./file-bytes.ts), written by the local gateway's upload route. Names are the
 * service's own (an account id and an `imp_` id), never a request's text.
 */
export const UPLOAD_DIR_VARIABLE = 'IMPORT_UPLOAD_DIR';
export const UPLOAD_BUCKET_VARIABLE = 'IMPORT_UPLOAD_BUCKET';

export const uploadKey = (accountId: string, id: string) => `imports/${accountId}/${id}.ndjson`;

function uploadDir(): string {
  const dir = process.env[UPLOAD_DIR_VARIABLE];
  if (!dir) throw new Error(`${UPLOAD_DIR_VARIABLE} is not set (npm start sets it)`);
  return resolve(dir);
}

/** The uploaded file of a job, read by range. */
export function uploadBytes(accountId: string, id: string): ByteSource {
  const bucket = process.env[UPLOAD_BUCKET_VARIABLE];
  if (bucket) return s3Bytes(bucket, uploadKey(accountId, id));
  return fileBytes(join(uploadDir(), uploadKey(accountId, id)));
}

/** Whether uploads go to S3 (deployed): then the upload URL is a presigned PUT, and the job polls for its file. */
export const uploadsInS3 = (): boolean => Boolean(process.env[UPLOAD_BUCKET_VARIABLE]);

/** A presigned S3 PUT of the job's file, valid `seconds`. */
export function presignedUpload(accountId: string, id: string, seconds: number): Promise<string> {
  const command = new PutObjectCommand({
    Bucket: process.env[UPLOAD_BUCKET_VARIABLE],
    Key: uploadKey(accountId, id),
  });
  return getSignedUrl(new S3Client({}), command, { expiresIn: seconds });
}

/** Whether the job's file is there (HeadObject deployed, the folder locally). */
export async function uploadPresent(accountId: string, id: string): Promise<boolean> {
  const bucket = process.env[UPLOAD_BUCKET_VARIABLE];
  try {
    if (bucket)
      await new S3Client({}).send(new HeadObjectCommand({ Bucket: bucket, Key: uploadKey(accountId, id) }));
    else await stat(join(uploadDir(), uploadKey(accountId, id)));
    return true;
  } catch (error) {
    const code = (error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } }) ?? {};
    if (code.name === 'NotFound' || code.code === 'ENOENT' || code.$metadata?.httpStatusCode === 404)
      return false;
    throw error;
  }
}

/** Keeps a local upload: written beside its name and renamed, so a file under the name is always whole. */
export async function putLocalUpload(accountId: string, id: string, body: Readable): Promise<void> {
  const path = join(uploadDir(), uploadKey(accountId, id));
  await mkdir(join(path, '..'), { recursive: true });
  const partial = `${path}.partial`;
  await pipeline(body, createWriteStream(partial));
  await rename(partial, path);
}
