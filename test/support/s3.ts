import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/**
 * A real S3 protocol server for a test file (s3rver on 127.0.0.1, docs/packages.md), its one bucket, and an SDK client
 * configured for it. What s3rver cannot show (IAM, encryption, lifecycle) is checked on the synthesized stack.
 */
export interface LocalS3 {
  client: S3Client;
  endpoint: string;
  /** A folder of the file's own beside the bucket's, removed with it. */
  dir: string;
  stop(): Promise<void>;
}

export async function startLocalS3(bucket: string): Promise<LocalS3> {
  const dir = await mkdtemp(join(tmpdir(), 'deskpipe-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: join(dir, 's3'),
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const address = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    endpoint,
    region: 'eu-west-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    // s3rver predates the SDK's default checksums (aws-chunked trailers): asked for only when S3 requires one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    client,
    endpoint,
    dir,
    stop: async () => {
      client.destroy();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
