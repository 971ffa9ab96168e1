import { readFileSync } from 'node:fs';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileBytes } from '#lib/data/imports/file-bytes.ts';
import { s3Bytes } from '#lib/data/imports/s3-bytes.ts';
import type { ByteSource } from '#lib/imports/byte-source.ts';
import { IMPORT_PHASES, type ImportRecord } from '#lib/imports/records.ts';
import { NDJSON_LIMITS, ndjsonSource } from '#lib/imports/sources/ndjson.ts';
import { type LocalS3, startLocalS3 } from '#test/support/s3.ts';

/**
 * An ndjson upload read from S3 by range, against a real S3 protocol server (s3rver on 127.0.0.1): each read one
 * `GetObject` with `Range`, the whole example read in small pages by fresh readers resumed from `next`, as a job's
 * runs after a crash would, and the same records as the local file gives.
 */
const BUCKET = 'deskpipe-test-imports';
const EXAMPLE = new URL('../../examples/import.ndjson', import.meta.url).pathname;
let s3: LocalS3;
let client: S3Client;

beforeAll(async () => {
  s3 = await startLocalS3(BUCKET);
  client = s3.client;
  await client.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'uploads/imp_1.ndjson', Body: readFileSync(EXAMPLE) }),
  );
});
afterAll(() => s3?.stop());

async function readAll(bytes: () => ByteSource): Promise<ImportRecord[]> {
  const records: ImportRecord[] = [];
  for (const phase of IMPORT_PHASES) {
    let from: string | null = null;
    do {
      const limits = { ...NDJSON_LIMITS, pageLines: 3, readBytes: 300 };
      const page = await ndjsonSource(bytes(), limits).page(phase, from, {});
      expect(page.errors).toEqual([]);
      records.push(...page.records);
      from = page.next;
    } while (from !== null);
  }
  return records;
}

describe('an ndjson upload in S3', () => {
  it('is read by range: its size, and exactly the bytes asked for', async () => {
    const example = readFileSync(EXAMPLE);
    const object = s3Bytes(BUCKET, 'uploads/imp_1.ndjson', client);
    expect(await object.size()).toBe(example.length);
    // Were the Range ignored, S3 would answer the whole object.
    expect(Buffer.from(await object.read(100, 250))).toEqual(example.subarray(100, 350));
    expect(Buffer.from(await object.read(example.length - 10, 10))).toEqual(example.subarray(-10));
    expect(await object.read(5, 0)).toHaveLength(0);
  });

  it('reads every record of the example in pages resumed from next, as the local file gives them', async () => {
    const fromS3 = await readAll(() => s3Bytes(BUCKET, 'uploads/imp_1.ndjson', client));
    const fromFile = await readAll(() => fileBytes(EXAMPLE));
    expect(fromS3.map((r) => r.type)).toEqual([
      ...['agents', 'agents', 'teams', 'teams', 'organizations', 'organizations'],
      ...['contacts', 'contacts', 'contacts', 'tickets', 'tickets', 'tickets', 'tickets'],
    ]);
    expect(fromS3).toEqual(fromFile);
  });
});
