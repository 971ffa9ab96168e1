import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#functions/import-runner.ts';
import { getJob } from '#lib/data/imports/jobs.ts';
import { claimJob, releaseJob } from '#lib/data/imports/runs.ts';
import { UPLOAD_DIR_VARIABLE } from '#lib/data/imports/uploads.ts';
import { importKeys } from '#lib/data/keys.ts';
import { ATTACHMENTS_PREFIX, MAIL_DIR_VARIABLE } from '#lib/data/mail-store.ts';
import { getItem, queryAll, tableName } from '#lib/data/store/client.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { runImportStep } from '#lib/imports/engine.ts';
import type { ImportedTicket, ImportRecord, ImportSourceReader } from '#lib/imports/records.ts';
import { importPass, LEASE_MS, runImports } from '#lib/imports/runner.ts';
import type { ImportWriters, PageWriter } from '#lib/imports/writers.ts';
import { countOutcome, type PageWritten } from '#lib/imports/writing.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import {
  startZendesk,
  ZENDESK_EMAIL,
  ZENDESK_TOKEN,
  type ZendeskServer,
} from '#test/support/vendors/zendesk.ts';

/**
 * The import engine and its runner (docs/imports.md, "The engine", "The runner"): an ndjson file uploaded to its
 * URL and read to the end, a runner killed between a page's writes and its save resumed by another once its lease
 * ran out (every record once), a cancel at the next checkpoint, a source refusing the credentials failing the job,
 * and the credentials in no answer, event or item once the job has ended. The writers here are keyed stand-ins
 * (a source id created once, then `unchanged`): what the engine hands them is what is under test.
 */
const gateway = useGateway();
const clockNow = useManualClock({ lazy: true });
const EXAMPLE = new URL('../../examples/import.ndjson', import.meta.url).pathname;
let dir: string;
let zendesk: ZendeskServer;

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-import-runs-'));
  process.env[UPLOAD_DIR_VARIABLE] = dir;
  // Where the tickets' attachments are copied (an ndjson file's inline ones).
  process.env[MAIL_DIR_VARIABLE] = join(dir, 'mail');
  zendesk = await startZendesk();
  process.env.IMPORT_ZENDESK_URL = zendesk.url;
});
afterAll(async () => {
  delete process.env.IMPORT_ZENDESK_URL;
  delete process.env[MAIL_DIR_VARIABLE];
  await zendesk?.close();
  await rm(dir, { recursive: true, force: true });
});

const caller = (account: TestAccount) => (method: string, path: string, body?: unknown) =>
  gateway.call(method, path, { key: account.apiKey, ...(body === undefined ? {} : { body }) });

/** A Zendesk job against the local vendor server, with credentials it accepts. */
const ZENDESK_JOB = { source: 'zendesk', subdomain: 'acme', email: ZENDESK_EMAIL, api_token: ZENDESK_TOKEN };

/** Keyed writers that remember what they created: a source id seen again is `unchanged`. */
function keyedWriters(options: { crashOnCall?: number } = {}) {
  const created = new Map<string, number>();
  const calls: string[][] = [];
  const write: PageWriter = async (_ctx, records: ImportRecord[]) => {
    const written: PageWritten = { counts: {}, errors: [] };
    calls.push(records.map((r) => idOf(r)));
    for (const record of records) {
      const key = `${record.type}:${idOf(record)}`;
      countOutcome(written, record.type, created.has(key) ? 'unchanged' : 'created');
      created.set(key, (created.get(key) ?? 0) + 1);
    }
    if (calls.length === options.crashOnCall) throw new Error('the runner died after writing this page');
    return written;
  };
  const writers: ImportWriters = { people: write, tickets: write };
  return { writers, created, calls };
}

const idOf = (r: ImportRecord) =>
  r.type === 'agents'
    ? r.agent.sourceId
    : r.type === 'teams'
      ? r.team.sourceId
      : r.type === 'organizations'
        ? r.organization.sourceId
        : r.type === 'contacts'
          ? r.contact.sourceId
          : r.ticket.sourceId;

/** An ndjson file of `n` contacts (three pages of the reader's 500 lines a phase, past 1,000). */
const contactsFile = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({ type: 'contact', id: `c-${i}`, email: `person${i}@runs.test`, name: `Person ${i}` }),
  ).join('\n');

async function startNdjson(account: TestAccount, file: string, mode = 'run'): Promise<string> {
  const started = await caller(account)('POST', '/api/imports', { source: 'ndjson', mode });
  expect(started.status, started.text).toBe(202);
  const put = await fetch(started.body.data.upload_url, { method: 'PUT', body: file });
  expect(put.status).toBe(200);
  // One file, once.
  expect((await fetch(started.body.data.upload_url, { method: 'PUT', body: file })).status).toBe(409);
  return started.body.data.id;
}

describe('the import runner', () => {
  it('reads an uploaded ndjson file to the end: exact counts, progress, import.completed in the feed, the account free again', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const id = await startNdjson(account, contactsFile(1_100));
    const { writers, created } = keyedWriters();
    await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', writers, untilDrained: true });
    const job = (await call('GET', `/api/imports/${id}`)).body.data;
    expect(job).toMatchObject({
      status: 'completed',
      phase: 'tickets',
      failure: null,
      progress: { done: 0, total: 0 },
    });
    expect(job.counts.contacts).toEqual({
      source: 1_100,
      created: 1_100,
      updated: 0,
      unchanged: 0,
      failed: 0,
    });
    expect(created.size).toBe(1_100);
    expect(job.started_at).not.toBeNull();
    expect(job.completed_at).not.toBeNull();
    const feed = await readFeedToEnd(gateway.call, account.apiKey);
    const ends = feed.events.filter((e) => e.type.startsWith('import.'));
    expect(ends.map((e) => e.type)).toEqual(['import.completed']);
    expect(ends[0]?.data.object).toMatchObject({ id, status: 'completed', counts: job.counts });
    expect((await call('POST', '/api/imports', { source: 'ndjson' })).status).toBe(202);
  });

  it('resumes from the checkpoint after a runner dies between a page and its save: every record once, counted once', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    const id = await startNdjson(account, contactsFile(1_100));
    // The contacts phase's second page: written, then the runner dies before its save.
    const dying = keyedWriters({ crashOnCall: 2 });
    await importPass({ owner: 'runner-a', writers: dying.writers });
    const held = await getItem(importKeys.job(account.accountId, id));
    expect(held).toMatchObject({ owner: 'runner-a', status: 'running' });
    // Another runner cannot take it while runner-a's lease holds.
    const next = keyedWriters();
    for (const [key, times] of dying.created) next.created.set(key, times);
    await runImports(Number.POSITIVE_INFINITY, {
      owner: 'runner-b',
      writers: next.writers,
      untilDrained: true,
    });
    expect((await caller(account)('GET', `/api/imports/${id}`)).body.data.status).toBe('running');
    await clock.advance(LEASE_MS + 1_000);
    await runImports(Number.POSITIVE_INFINITY, {
      owner: 'runner-b',
      writers: next.writers,
      untilDrained: true,
    });
    const job = (await caller(account)('GET', `/api/imports/${id}`)).body.data;
    expect(job.status).toBe('completed');
    // Runner-b read the dead runner's unsaved page again (500 contacts, found as written), and nothing else twice.
    expect(job.counts.contacts).toEqual({
      source: 1_100,
      created: 600,
      updated: 0,
      unchanged: 500,
      failed: 0,
    });
    expect([...next.created.values()].filter((n) => n > 2)).toEqual([]);
    expect([...next.created.values()].filter((n) => n === 2)).toHaveLength(500);
    expect(next.created.size).toBe(1_100);
  });

  it('stops a cancelled import at its next checkpoint: what is in stays, nothing more is read; a second cancel is a 409', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const id = await startNdjson(account, contactsFile(1_100));
    const { writers, calls } = keyedWriters();
    // Three pages a phase: the people phases before contacts read, and the contacts' first page written.
    await importPass({ owner: 'runner-a', writers, stepsPerJob: 10 });
    expect(calls).toHaveLength(1);
    const cancel = await call('POST', `/api/imports/${id}/cancel`);
    expect(cancel.status, cancel.text).toBe(202);
    expect(cancel.body.data.status).toBe('running');
    const before = calls.length;
    await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', writers, untilDrained: true });
    expect(calls.length).toBe(before);
    const job = (await call('GET', `/api/imports/${id}`)).body.data;
    expect(job).toMatchObject({ status: 'cancelled', phase: 'contacts' });
    expect(job.counts.contacts.source).toBe(500);
    expect((await call('POST', `/api/imports/${id}/cancel`)).status).toBe(409);
    // No event for a cancel; the account may start another.
    const feed = await readFeedToEnd(gateway.call, account.apiKey);
    expect(feed.events.filter((e) => e.type.startsWith('import.'))).toEqual([]);
    expect((await call('POST', '/api/imports', { source: 'ndjson' })).status).toBe(202);
  });

  it('fails a job whose source refuses the credentials (401) at once, with the reason; the token is nowhere after', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const token = 'zd-wrong-token-93kd02';
    const started = await call('POST', '/api/imports', {
      source: 'zendesk',
      subdomain: 'acme',
      email: ZENDESK_EMAIL,
      api_token: token,
    });
    expect(started.status).toBe(202);
    const id = started.body.data.id as string;
    const { writers, calls } = keyedWriters();
    await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', writers, untilDrained: true });
    const shown = await call('GET', `/api/imports/${id}`);
    expect(shown.body.data).toMatchObject({
      status: 'failed',
      failure: 'the source refused the credentials (HTTP 401)',
    });
    expect(calls).toEqual([]);
    const feed = await readFeedToEnd(gateway.call, account.apiKey);
    expect(feed.events.filter((e) => e.type.startsWith('import.')).map((e) => e.type)).toEqual([
      'import.failed',
    ]);
    // No credential left: not in the answers, the feed, or any item of the account's imports.
    const items = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': importKeys.partition(account.accountId) },
    });
    expect(items.map((item) => item.sk)).toEqual([`IMPORT#${id}`]);
    expect(items[0]?.cred).toBeUndefined();
    for (const text of [started.text, shown.text, JSON.stringify(feed.events), JSON.stringify(items)]) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(ZENDESK_EMAIL);
    }
  });

  it('runs deployed (functions/import-runner.ts) with the people writer: contacts created, and the same file again all unchanged', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    // Time to spare: the run ends once nothing is due, not when its time is up.
    const context = { getRemainingTimeInMillis: () => 900_000, awsRequestId: 'import-run' } as Context;
    const counts = [];
    for (let run = 0; run < 2; run++) {
      const id = await startNdjson(account, contactsFile(30));
      await handler(undefined, context);
      const job = (await call('GET', `/api/imports/${id}`)).body.data;
      expect(job.status).toBe('completed');
      counts.push(job.counts.contacts);
    }
    expect(counts).toEqual([
      { source: 30, created: 30, updated: 0, unchanged: 0, failed: 0 },
      { source: 30, created: 0, updated: 0, unchanged: 30, failed: 0 },
    ]);
    const contacts = await call('GET', '/api/contacts?per_page=100');
    expect(contacts.body.data).toHaveLength(30);
  });

  it('imports examples/import.ndjson with the writers: exact counts by type, tickets and their people there, progress done', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    // Rules that would fire on every ticket and change: an import runs none (decisions.md, "Business rules").
    const rules = [];
    for (const on of ['created', 'updated', 'message']) {
      const body = {
        name: on,
        on,
        conditions: { all: [] },
        actions: [{ type: 'add_tags', tags: ['ruled'] }],
      };
      const made = await call('POST', '/api/rules', body);
      expect(made.status, made.text).toBe(201);
      rules.push(made.body.data.id as number);
    }
    const id = await startNdjson(account, readFileSync(EXAMPLE, 'utf8'));
    await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', untilDrained: true });
    const job = (await call('GET', `/api/imports/${id}`)).body.data;
    expect(job).toMatchObject({ status: 'completed', failure: null, progress: { done: 4, total: 4 } });
    const created = (n: number) => ({ source: n, created: n, updated: 0, unchanged: 0, failed: 0 });
    expect(job.counts).toMatchObject({
      agents: created(2),
      teams: created(2),
      organizations: created(2),
      contacts: created(3),
      tickets: created(4),
      messages: created(10),
      attachments: { source: 2, created: 1, updated: 0, unchanged: 0, failed: 1 },
    });
    const tickets = await call('GET', '/api/tickets?per_page=100');
    expect(tickets.body.data).toHaveLength(4);
    expect(tickets.body.data.filter((t: { tags: string[] }) => t.tags.includes('ruled'))).toEqual([]);
    for (const rule of rules) {
      expect((await call('GET', `/api/rules/${rule}`)).body.data.fired).toEqual({
        last_hour: 0,
        last_day: 0,
        last_week: 0,
      });
    }
    // The example's two messages by authors it does not hold: kept as system messages, each an error row.
    expect((await call('GET', `/api/imports/${id}/errors`)).body).toEqual({
      data: [
        {
          type: 'messages',
          source_id: 'm-7',
          reason: 'The author (unknown unknown) was not imported: kept as system',
        },
        // A file's attachment URL is never fetched (docs/import-format.md, "Attachments"); att-2's inline bytes are copied.
        {
          type: 'attachments',
          source_id: 'att-1',
          reason: 'The source has no host attachments are fetched from: not copied',
        },
        {
          type: 'messages',
          source_id: 'm-9',
          reason: 'The author (contact c-999) was not imported: kept as system',
        },
      ],
      next_cursor: null,
    });
  });

  it("copies an ndjson file's inline attachments into the mail store, downloaded byte for byte; a URL, bad content, a wrong or too large size are error rows, the rest imported; again: unchanged, nothing copied twice", async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const mail = join(dir, 'mail');
    const shot = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80, 0]);
    const notes = Buffer.from('Order 1142, shipped 3 March\n');
    const at = '2024-01-01T00:00:00Z';
    const attachments = [
      {
        id: 'a-ok',
        file_name: '../../shot.png',
        content_type: 'image/png',
        size: 9,
        content: shot.toString('base64'),
      },
      { id: 'a-txt', file_name: 'notes.txt', content: notes.toString('base64') },
      { id: 'a-url', file_name: 'a.pdf', url: 'http://169.254.169.254/latest/meta-data/' },
      { id: 'a-bad', file_name: 'b.bin', content: 'not base64!' },
      { id: 'a-size', file_name: 'c.bin', content: shot.toString('base64'), size: 8 },
      { id: 'a-big', file_name: 'd.bin', content: 'AAAA', size: 26 * 1024 * 1024 },
    ];
    const file = (subject: string) =>
      [
        JSON.stringify({ type: 'contact', id: 'c-1', email: 'dee@files.test' }),
        JSON.stringify({
          ...{ type: 'ticket', id: 't-1', subject, status: 'open', created_at: at, requester: { id: 'c-1' } },
          messages: [
            { id: 'm-1', author: { type: 'contact', id: 'c-1' }, body: 'Files', created_at: at, attachments },
          ],
        }),
      ].join('\n');
    const run = async (subject: string) => {
      const id = await startNdjson(account, file(subject));
      await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', untilDrained: true });
      const job = (await call('GET', `/api/imports/${id}`)).body.data;
      expect(job.status).toBe('completed');
      const errors = (await call('GET', `/api/imports/${id}/errors`)).body.data as Record<string, string>[];
      return { counts: job.counts, errors: errors.map((e) => [e.source_id, e.reason]) };
    };
    const kept = async () =>
      (await readdir(join(mail, ATTACHMENTS_PREFIX, account.accountId), { recursive: true })).filter((f) =>
        f.includes('att_'),
      );
    const refused = [
      ['a-url', 'The source has no host attachments are fetched from: not copied'],
      [
        'a-bad',
        'The attachment content is not base64 (the standard alphabet, padded, with no line breaks): not copied',
      ],
      ['a-size', 'The attachment content is 9 bytes, but its size says 8: not copied'],
      ['a-big', 'The attachment passes 25 MiB: not copied'],
    ];

    const first = await run('Files');
    expect(first.counts.tickets).toMatchObject({ created: 1, failed: 0 });
    expect(first.counts.attachments).toEqual({ source: 6, created: 2, updated: 0, unchanged: 0, failed: 4 });
    expect(first.errors).toEqual(refused);
    const uuid = (await call('GET', '/api/tickets')).body.data[0].uuid as string;
    const [message] = (await call('GET', `/api/tickets/${uuid}/messages`)).body.data;
    expect(message.attachments).toEqual([
      { id: expect.stringMatching(/^att_/), filename: '../../shot.png', content_type: 'image/png', size: 9 },
      {
        id: expect.stringMatching(/^att_/),
        filename: 'notes.txt',
        content_type: 'application/octet-stream',
        size: notes.length,
      },
    ]);
    const download = async (n: number) => {
      const path = `/api/tickets/${uuid}/messages/${message.id}/attachments/${message.attachments[n].id}`;
      const r = await fetch(`${gateway.baseUrl}${path}`, {
        headers: { Authorization: `Bearer ${account.apiKey}` },
      });
      expect(r.status).toBe(200);
      return Buffer.from(await r.arrayBuffer());
    };
    expect((await download(0)).equals(shot)).toBe(true);
    expect((await download(1)).equals(notes)).toBe(true);
    // Kept under ids, never under the file's name: nothing named by it anywhere in the store.
    const stored = await kept();
    expect(stored).toHaveLength(2);
    expect((await readdir(mail, { recursive: true })).filter((f) => f.includes('shot'))).toEqual([]);

    // Marked in the store: a copy made again would put the file's bytes back.
    const marked = stored.find((f) => f.endsWith(message.attachments[0].id)) as string;
    await writeFile(join(mail, ATTACHMENTS_PREFIX, account.accountId, marked), 'kept');
    const again = await run('Files');
    expect(again.counts.tickets).toMatchObject({ unchanged: 1 });
    expect(again.counts.attachments).toEqual({ source: 6, created: 0, updated: 0, unchanged: 6, failed: 0 });
    // Changed: the ticket is written again and finds its attachments kept (as a run stopped after their copy does).
    const changed = await run('Files, renamed');
    expect(changed.counts.tickets).toMatchObject({ updated: 1 });
    expect(changed.counts.attachments).toEqual({
      source: 6,
      created: 0,
      updated: 0,
      unchanged: 2,
      failed: 4,
    });
    expect(changed.errors).toEqual(refused);
    expect(await kept()).toEqual(stored);
    expect((await download(0)).toString()).toBe('kept');
  });

  it('pauses when the source asks to wait longer than a step may (429, Retry-After 120 s), asks nothing before then, and reads on from the checkpoint', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    const call = caller(account);
    const id = (await call('POST', '/api/imports', ZENDESK_JOB)).body.data.id as string;
    const asked = zendesk.requests.length;
    zendesk.faults.push({ status: 429, headers: { 'Retry-After': '120' } });
    const { writers, calls } = keyedWriters();
    await importPass({ owner: 'runner-a', writers });
    expect((await call('GET', `/api/imports/${id}`)).body.data.status).toBe('paused');
    const refusedAt = zendesk.requests[asked]?.at ?? 0;
    await clock.advance(60_000);
    await importPass({ owner: 'runner-b', writers });
    expect(zendesk.requests).toHaveLength(asked + 1);
    await clock.advance(61_000);
    const run = runImports(Number.POSITIVE_INFINITY, { owner: 'runner-b', writers, untilDrained: true });
    await clock.advance(15 * 60_000);
    await run;
    const job = (await call('GET', `/api/imports/${id}`)).body.data;
    expect(job.status).toBe('completed');
    expect(calls.length).toBeGreaterThan(0);
    const after = zendesk.requests.slice(asked + 1);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((r) => r.at < refusedAt + 120_000)).toEqual([]);
  });

  it('ends a deployed run before its timeout: a page still read when its time is up is cut, the job released due at once from its checkpoint (not paused), and the next run reads that page again', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    const call = caller(account);
    const id = (await call('POST', '/api/imports', ZENDESK_JOB)).body.data.id as string;
    const asked = zendesk.requests.length;
    // The source answers its first page after 25 s; the function has 40 s left, so the run stops by 10 s.
    zendesk.faults.push({ delayMs: 25_000 });
    const context = { getRemainingTimeInMillis: () => 40_000, awsRequestId: 'import-cut' } as Context;
    const run = handler(undefined, context);
    await clock.advance(10_000);
    await run;
    const held = await getItem(importKeys.job(account.accountId, id));
    expect(held?.owner).toBeUndefined();
    expect(held?.checkpoint).toEqual({ phase: 'agents', next: null, page: 0 });
    expect(held?.gsi2sk).toBe(importKeys.due(account.accountId, id, nowMillis()).gsi2sk);
    expect((await call('GET', `/api/imports/${id}`)).body.data.status).toBe('queued');
    const first = zendesk.requests[asked]?.path;
    const { writers } = keyedWriters();
    const drain = runImports(Number.POSITIVE_INFINITY, { owner: 'runner-b', writers, untilDrained: true });
    await clock.advance(15 * 60_000);
    await drain;
    expect((await call('GET', `/api/imports/${id}`)).body.data.status).toBe('completed');
    expect(zendesk.requests[asked + 1]?.path).toBe(first);
  });

  it('validates without writing, then a run of the same file gives the same counts and error rows', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const file = readFileSync(EXAMPLE, 'utf8');
    const validateId = await startNdjson(account, file, 'validate');
    await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', untilDrained: true });
    const validated = (await call('GET', `/api/imports/${validateId}`)).body.data;
    expect(validated).toMatchObject({ status: 'completed', mode: 'validate' });
    // Nothing written but the job: no ticket, no contact, no event.
    expect((await call('GET', '/api/tickets')).body.data).toEqual([]);
    expect((await call('GET', '/api/contacts')).body.data).toEqual([]);
    expect((await readFeedToEnd(gateway.call, account.apiKey)).events).toEqual([]);
    const runId = await startNdjson(account, file);
    await runImports(Number.POSITIVE_INFINITY, { owner: 'runner-a', untilDrained: true });
    const run = (await call('GET', `/api/imports/${runId}`)).body.data;
    expect(run.status).toBe('completed');
    // The tickets name people the validate run would create (ticket 5001's requester by id alone, assignees,
    // teams, organizations, authors): found as the run finds them.
    expect(validated.counts).toEqual(run.counts);
    expect(validated.counts.tickets).toMatchObject({ source: 4, created: 4, failed: 0 });
    const rows = async (id: string) => (await call('GET', `/api/imports/${id}/errors`)).body.data;
    expect(await rows(validateId)).toEqual(await rows(runId));
  });

  it('moves progress at least every 5 s within a slow page of tickets; the page still saves, and a page read again after a crash counts once', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    const body = { source: 'zendesk', subdomain: 'acme', email: ZENDESK_EMAIL, api_token: ZENDESK_TOKEN };
    const id = (await caller(account)('POST', '/api/imports', body)).body.data.id as string;
    // A source as slow as Zendesk's comments: each ticket of the one page read in 1 s of the clock, written in 1 s.
    const reader: ImportSourceReader = {
      source: 'zendesk',
      async page(phase, _from, { onTicket }) {
        if (phase !== 'tickets') return { records: [], errors: [], next: null };
        const records: ImportRecord[] = [];
        for (let i = 0; i < 20; i++) {
          await sleep(1_000);
          onTicket?.();
          records.push({ type: 'tickets', ticket: { sourceId: `t-${i}` } as ImportedTicket });
        }
        return { records, errors: [], next: null, total: 20 };
      },
    };
    let crashAfter = 10;
    const tickets: PageWriter = async (ctx, records) => {
      const written: PageWritten = { counts: {}, errors: [] };
      for (const _ of records) {
        await sleep(1_000);
        ctx.onTicket?.();
        countOutcome(written, 'tickets', 'created');
        if (--crashAfter === 0) throw new Error('the store failed in the middle of the page');
      }
      return written;
    };
    const writers = { people: keyedWriters().writers.people, tickets };
    const claim = () => claimJob(account.accountId, id, 'runner-a', nowMillis() + LEASE_MS, nowMillis());
    let job = await claim();
    while (job && job.checkpoint.phase !== 'tickets') {
      const step = await runImportStep(job, { owner: 'runner-a', leaseMs: LEASE_MS, reader, writers });
      job = step.outcome === 'more' ? step.job : undefined;
    }
    if (!job) throw new Error('the job did not reach its tickets');
    const options = { owner: 'runner-a', leaseMs: LEASE_MS, reader, writers };
    const watch = async (step: Promise<unknown>) => {
      let ended = false;
      const outcome = step.then(
        (value) => value,
        (error: Error) => error.message,
      );
      void outcome.then(() => {
        ended = true;
      });
      const seen: number[] = [];
      while (!ended) {
        await clock.advance(1_000);
        seen.push((await getJob(account.accountId, id))?.progress.done ?? -1);
      }
      return { outcome: await outcome, seen };
    };
    // 20 s of reading and 10 s of writing, then the page fails: its progress moved all along, and was saved alone.
    const first = await watch(runImportStep(job, options));
    expect(first.outcome).toBe('the store failed in the middle of the page');
    const unchangedFor = first.seen.reduce(
      (run, done, i) => ({
        now: done === first.seen[i - 1] ? run.now + 1 : 1,
        most: Math.max(run.most, done === first.seen[i - 1] ? run.now + 1 : 1),
      }),
      { now: 0, most: 0 },
    ).most;
    expect(unchangedFor).toBeLessThanOrEqual(5);
    expect(first.seen.at(-1)).toBeGreaterThanOrEqual(13);
    expect(await getJob(account.accountId, id)).toMatchObject({ rev: job.rev, checkpoint: job.checkpoint });
    // The runner takes it again (due again after a throw) and reads the page again from its checkpoint.
    await releaseJob(job, 'runner-a', nowMillis());
    const again = await claim();
    if (!again) throw new Error('the job was not claimed again');
    const second = await watch(runImportStep(again, options));
    expect(second.outcome).toEqual({ outcome: 'ended' });
    expect(Math.min(...second.seen)).toBeGreaterThanOrEqual(first.seen.at(-1) ?? 0);
    const ended = (await caller(account)('GET', `/api/imports/${id}`)).body.data;
    expect(ended).toMatchObject({ status: 'completed', progress: { done: 20, total: 20 } });
    expect(ended.counts.tickets).toEqual({ source: 20, created: 20, updated: 0, unchanged: 0, failed: 0 });
  });

  it('keeps its lease through a long page (a heartbeat every 20 s): no other runner takes the job meanwhile', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    const agent = {
      type: 'agent',
      id: 'u-1',
      email: 'slow@runs.test',
      name: 'Slow',
      active: true,
      team_ids: [],
    };
    const id = await startNdjson(account, JSON.stringify(agent));
    const slow = keyedWriters();
    let entered = () => {};
    const writing = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const write: PageWriter = async (ctx, records) => {
      entered();
      await sleep(150_000);
      return slow.writers.people(ctx, records);
    };
    const running = importPass({
      owner: 'runner-a',
      writers: { people: write, tickets: write },
      stepsPerJob: 1,
    });
    // The clock moves once the page is being written (reading the file takes no time of the clock).
    await writing;
    await clock.advance(100_000);
    const other = keyedWriters();
    await importPass({ owner: 'runner-b', writers: other.writers });
    expect(other.calls).toEqual([]);
    expect(await getItem(importKeys.job(account.accountId, id))).toMatchObject({ owner: 'runner-a' });
    await clock.advance(60_000);
    await running;
    expect(slow.calls).toEqual([['u-1']]);
    expect((await caller(account)('GET', `/api/imports/${id}`)).body.data.phase).toBe('teams');
  });
});
