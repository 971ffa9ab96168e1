import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPLOAD_BUCKET_VARIABLE } from '#lib/data/imports/uploads.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { runImports } from '#lib/imports/runner.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withEnvironment } from '#test/support/environment.ts';
import { useGateway } from '#test/support/http.ts';
import { type LocalS3, startLocalS3 } from '#test/support/s3.ts';

/**
 * An ndjson import's file in S3, as deployed (IMPORT_UPLOAD_BUCKET set), against a real S3 protocol server (s3rver
 * on 127.0.0.1): the answer's upload URL is a presigned PUT; the job looks for its file until it is there, then reads
 * it by range to the end.
 */
const gateway = useGateway();
const clockNow = useManualClock({ lazy: true });
const BUCKET = 'deskpipe-test-import-uploads';
let s3: LocalS3;

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  s3 = await startLocalS3(BUCKET);
});
afterAll(() => s3?.stop());

const deployed = () => ({
  [UPLOAD_BUCKET_VARIABLE]: BUCKET,
  AWS_ENDPOINT_URL_S3: s3.endpoint,
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
  AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_REQUIRED',
});

describe('an ndjson import uploaded to S3', () => {
  it('answers a presigned PUT, waits for the file, then imports it', () =>
    withEnvironment(deployed(), async () => {
      const clock = clockNow();
      const account = await createTestAccount();
      const call = (method: string, path: string, body?: unknown) =>
        gateway.call(method, path, { key: account.apiKey, ...(body === undefined ? {} : { body }) });
      const started = (await call('POST', '/api/imports', { source: 'ndjson' })).body.data;
      const url = new URL(started.upload_url);
      expect(url.origin).toBe(s3.endpoint);
      expect(url.pathname).toBe(`/${BUCKET}/imports/${account.accountId}/${started.id}.ndjson`);
      expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
      // No file yet: the job waits for it.
      await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-s3', untilDrained: true });
      expect((await call('GET', `/api/imports/${started.id}`)).body.data.status).toBe('queued');
      const lines = [1, 2, 3].map((i) =>
        JSON.stringify({
          type: 'contact',
          id: `s3-${i}`,
          email: `s3.person${i}@upload.test`,
          name: `S3 ${i}`,
        }),
      );
      expect((await fetch(url, { method: 'PUT', body: lines.join('\n') })).status).toBe(200);
      // Looked for again 10 s after the last look.
      await clock.advance(9_000);
      await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-s3', untilDrained: true });
      expect((await call('GET', `/api/imports/${started.id}`)).body.data.status).toBe('queued');
      await clock.advance(1_000);
      await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-s3', untilDrained: true });
      const job = (await call('GET', `/api/imports/${started.id}`)).body.data;
      expect(job.status).toBe('completed');
      expect(job.counts.contacts).toEqual({ source: 3, created: 3, updated: 0, unchanged: 0, failed: 0 });
    }));
});
