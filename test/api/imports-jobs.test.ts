import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPLOAD_DIR_VARIABLE } from '#lib/data/imports/uploads.ts';
import { importKeys } from '#lib/data/keys.ts';
import { getItem } from '#lib/data/store/client.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The import routes over the local gateway (decisions.md, "Imports: moving a helpdesk in"): a job started (202) as
 * the account's one import (a second is a 409), bodies refused on their field, another account's job a 404, the
 * credentials sealed on the item and never answered.
 */
const gateway = useGateway();
let dir: string;
const TOKEN = 'zd-secret-token-4ef1c9';

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-imports-'));
  process.env[UPLOAD_DIR_VARIABLE] = dir;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const caller =
  (account: TestAccount) =>
  (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    gateway.call(method, path, {
      key: account.apiKey,
      ...(body === undefined ? {} : { body }),
      ...(headers ? { headers } : {}),
    });

const zendesk = { source: 'zendesk', subdomain: 'acme', email: 'admin@acme.test', api_token: TOKEN };

describe('import jobs', () => {
  it('starts an import (202), one per account: a second is a 409 naming the first; GET and the list show it, never the token', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const started = await call('POST', '/api/imports', { ...zendesk, mode: 'validate', rate_share: 0.25 });
    expect(started.status, started.text).toBe(202);
    const job = started.body.data;
    expect(job).toMatchObject({
      source: 'zendesk',
      mode: 'validate',
      status: 'queued',
      phase: 'agents',
      progress: { done: 0, total: null },
      failure: null,
      started_at: null,
    });
    expect(job.counts.tickets).toEqual({ source: 0, created: 0, updated: 0, unchanged: 0, failed: 0 });
    expect(job.upload_url).toBeUndefined();

    const second = await call('POST', '/api/imports', { source: 'ndjson' });
    expect(second.status).toBe(409);
    expect(second.body.message).toContain(job.id);

    const shown = await call('GET', `/api/imports/${job.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.data).toEqual((({ upload_url: _, ...rest }) => rest)(job));
    const listed = await call('GET', '/api/imports');
    expect(listed.body).toEqual({ data: [shown.body.data], next_cursor: null });
    for (const answer of [started, shown, listed]) expect(answer.text).not.toContain(TOKEN);

    // On the item, the credentials are sealed: neither the token nor the address in the clear.
    const item = await getItem(importKeys.job(account.accountId, job.id));
    expect(typeof item?.cred).toBe('string');
    expect(JSON.stringify(item)).not.toContain(TOKEN);
    expect(JSON.stringify(item)).not.toContain('admin@acme.test');
  });

  it('refuses bad bodies on the field (422)', async () => {
    const call = caller(await createTestAccount());
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'source'],
      [{ source: 'intercom' }, 'source'],
      [{ source: 'zendesk', subdomain: 'acme', email: 'admin@acme.test' }, 'api_token'],
      [{ ...zendesk, subdomain: 'evil.com/x' }, 'subdomain'],
      [{ ...zendesk, email: 'not an address' }, 'email'],
      [{ source: 'freshdesk', domain: 'acme' }, 'api_key'],
      [{ ...zendesk, mode: 'dry' }, 'mode'],
      [{ ...zendesk, since: '2026-02-30T00:00:00Z' }, 'since'],
      [{ ...zendesk, rate_share: 0.05 }, 'rate_share'],
      [{ ...zendesk, rate_share: 2 }, 'rate_share'],
    ];
    for (const [body, field] of cases) {
      const answer = await call('POST', '/api/imports', body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(answer.body.errors), JSON.stringify(body)).toEqual([field]);
      expect(answer.text).not.toContain(TOKEN);
    }
    // Nothing was started: a good body is accepted now.
    expect((await call('POST', '/api/imports', zendesk)).status).toBe(202);
  });

  it("answers 404 for another account's import and for what names none", async () => {
    const [mine, theirs] = [await createTestAccount(), await createTestAccount()];
    const id = (await caller(mine)('POST', '/api/imports', { source: 'ndjson' })).body.data.id as string;
    const other = caller(theirs);
    for (const path of [`/api/imports/${id}`, `/api/imports/${id}/errors`, '/api/imports/imp_nothing'])
      expect((await other('GET', path)).status, path).toBe(404);
    expect((await other('POST', `/api/imports/${id}/cancel`)).status).toBe(404);
    expect((await other('GET', '/api/imports')).body.data).toEqual([]);
    const errors = await caller(mine)('GET', `/api/imports/${id}/errors`);
    expect(errors.body).toEqual({ data: [], next_cursor: null });
  });

  it('answers an ndjson import with its upload URL; Idempotency-Key replays the same job', async () => {
    const call = caller(await createTestAccount());
    const headers = { 'Idempotency-Key': 'import-once-1' };
    const first = await call('POST', '/api/imports', { source: 'ndjson' }, headers);
    expect(first.status).toBe(202);
    expect(first.body.data.upload_url).toMatch(
      new RegExp(
        `^${gateway.baseUrl}/local/imports/[^/]+/${first.body.data.id}\\?expires=\\d+&signature=[0-9a-f]{64}$`,
      ),
    );
    const again = await call('POST', '/api/imports', { source: 'ndjson' }, headers);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
  });

  it('refuses an upload whose signature does not hold, or names another job (403); the job waits for its own', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const started = (await call('POST', '/api/imports', { source: 'ndjson' })).body.data;
    const url = new URL(started.upload_url);
    const forged = new URL(url);
    forged.searchParams.set('signature', '0'.repeat(64));
    const elsewhere = new URL(url);
    elsewhere.pathname = url.pathname.replace(started.id, 'imp_17000000000000000000000');
    const late = new URL(url);
    late.searchParams.set('expires', String(Date.now() - 1));
    for (const bad of [forged, elsewhere, late]) {
      expect((await fetch(bad, { method: 'PUT', body: '{}' })).status, bad.href).toBe(403);
    }
    const item = await getItem(importKeys.job(account.accountId, started.id));
    expect(item).toMatchObject({ uploaded: false, status: 'queued' });
    expect(item?.gsi2pk).toBeUndefined();
    expect((await fetch(url, { method: 'PUT', body: '{}' })).status).toBe(200);
    expect(await getItem(importKeys.job(account.accountId, started.id))).toMatchObject({ uploaded: true });
  });
});
