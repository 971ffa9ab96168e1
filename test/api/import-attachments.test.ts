import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { ATTACHMENTS_PREFIX, MAIL_DIR_VARIABLE, mailStore } from '#lib/data/mail-store.ts';
import { type AttachmentFiles, sourceAttachmentCopier } from '#lib/imports/attachments.ts';
import { closeSourceConnections } from '#lib/imports/http.ts';
import { copierFor } from '#lib/imports/readers.ts';
import type { ImportedAttachment, ImportedMessage, ImportedTicket } from '#lib/imports/records.ts';
import { ndjsonSource } from '#lib/imports/sources/ndjson.ts';
import { zendeskSource } from '#lib/imports/sources/zendesk.ts';
import { copyTicketFiles } from '#lib/imports/ticket-files.ts';
import { writeTickets } from '#lib/imports/tickets.ts';
import type { ImportContext } from '#lib/imports/writing.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import {
  startZendesk,
  ZENDESK_EMAIL,
  ZENDESK_TOKEN,
  type ZendeskServer,
  zendeskFixture,
} from '#test/support/vendors/zendesk.ts';

/**
 * Imported attachments, copied (issue 42; decisions.md, "Imports"): from the local Zendesk's content_url (the
 * operator's override host, the only one allowed under it) into the account's mail store, downloadable through
 * the API byte for byte as e-mailed ones are; one past 25 MiB and one on another host are error rows, nothing
 * kept; a page written again after a run stopped between the copy and the commit stores each attachment once.
 */
const gateway = useGateway();
const clock = useManualClock();
// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;

const described = randomBytes(3000);
const replied = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80, 0]);
const big = Buffer.alloc(26 * 1024 * 1024, 7);
let zendesk: ZendeskServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-import-files-'));
  process.env[MAIL_DIR_VARIABLE] = dir;
  zendesk = await startZendesk({ ...zendeskFixture(), files: { desc: described, reply: replied, big } });
});
afterAll(async () => {
  closeSourceConnections();
  await zendesk?.close();
  delete process.env[MAIL_DIR_VARIABLE];
  await rm(dir, { recursive: true, force: true });
});

function ctxOf(a: TestAccount): ImportContext {
  const reader = zendeskSource({
    ...{ subdomain: 'acme', email: ZENDESK_EMAIL, apiToken: ZENDESK_TOKEN, rateShare: 1 },
    env: { IMPORT_ZENDESK_URL: zendesk.url },
  });
  const files = reader.files as AttachmentFiles;
  return {
    ...{ accountId: a.accountId, importId: 'imp_files', source: 'zendesk', validate: false },
    attachments: sourceAttachmentCopier(files, mailStore()),
  };
}

const file = (sourceId: string, url: string, size: number | null = null): ImportedAttachment => ({
  ...{ sourceId, fileName: `${sourceId}.bin`, contentType: 'application/pdf', size, url },
});
const message = (sourceId: string, attachments: ImportedAttachment[], mail: string | null = null) =>
  ({
    ...{
      sourceId,
      author: { kind: 'unknown', sourceId: null },
      body: `body of ${sourceId}`,
      internal: false,
    },
    ...{ createdAt: '2024-02-01T09:00:00.000000Z', messageId: mail, attachments },
  }) satisfies ImportedMessage;

function ticket(subject: string): ImportedTicket {
  const token = (t: string) => `${zendesk.url}/attachments/token/${t}/?name=${t}`;
  return {
    ...{ sourceId: '501', subject, status: 'open', priority: null, tags: [], customFields: {} },
    ...{ createdAt: '2024-02-01T09:00:00.000000Z', updatedAt: '2024-02-01T10:00:00.000000Z' },
    ...{ resolvedAt: null, closedAt: null, requester: { sourceId: null, email: 'dee@customer.test' } },
    ...{ assigneeSourceId: null, teamSourceId: null, organizationSourceId: null },
    messages: [
      message('c1', [file('f-desc', token('desc'), described.length)]),
      message(
        'c2',
        [
          file('f-reply', token('reply')),
          file('f-big', token('big')),
          file('f-else', 'https://p3.zdusercontent.com/attachment/1/else.pdf', 10),
        ],
        'reply-1@customer.test',
      ),
    ],
  };
}

const fetched = (token: string) =>
  zendesk.requests.filter((r) => r.path.startsWith(`/attachments/token/${token}/`)).length;
const kept = async (a: TestAccount) =>
  (await readdir(join(dir, ATTACHMENTS_PREFIX, a.accountId), { recursive: true })).filter((f) =>
    f.includes('att_'),
  );

/**
 * Runs `work` to its end on the manual clock: the source's pacing waits on it, so it is moved a slot at a time
 * while something waits; the mail store's file writes (no request the clock's settle sees) get turns of the loop.
 */
async function drive<T>(work: Promise<T>): Promise<T> {
  let settled = false;
  const done = () => {
    settled = true;
  };
  work.then(done, done);
  for (let turns = 0; !settled; turns++) {
    if (turns > 100_000) throw new Error('the work did not end');
    if (clock().waiting > 0) await clock().advance(300);
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return work;
}

async function download(a: TestAccount, uuid: string, messageId: string, id: string): Promise<Buffer> {
  const r = await fetch(`${gateway.baseUrl}/api/tickets/${uuid}/messages/${messageId}/attachments/${id}`, {
    headers: { Authorization: `Bearer ${a.apiKey}` },
  });
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

describe('imported attachments', () => {
  it('are copied once, downloadable byte for byte; too large or elsewhere are error rows', async () => {
    const a = await createTestAccount({ ticket_prefix: 'AT' });
    const ctx = ctxOf(a);
    // Validate: decided without a copy, nothing fetched.
    const page = [{ type: 'tickets' as const, ticket: ticket('Fire') }];
    const checked = await writeTickets({ ...ctx, validate: true, attachments: undefined }, page);
    expect(checked.counts.attachments).toEqual({
      source: 4,
      created: 4,
      updated: 0,
      unchanged: 0,
      failed: 0,
    });
    expect(zendesk.requests).toHaveLength(0);
    // A run stopped after copying the ticket's attachments, before its commit.
    await drive(copyTicketFiles(ctx, ctx.attachments as never, ticket('Fire'), true));
    expect([fetched('desc'), fetched('reply'), fetched('big')]).toEqual([1, 1, 1]);

    const written = await drive(writeTickets(ctx, [{ type: 'tickets', ticket: ticket('Fire') }]));
    expect(written.counts.tickets).toMatchObject({ created: 1 });
    expect(written.counts.attachments).toEqual({
      source: 4,
      created: 2,
      updated: 0,
      unchanged: 0,
      failed: 2,
    });
    const rows = written.errors.filter((e) => e.type === 'attachments');
    expect(rows).toEqual([
      { type: 'attachments', sourceId: 'f-big', reason: 'The attachment passes 25 MiB: not copied' },
      {
        type: 'attachments',
        sourceId: 'f-else',
        reason: 'The attachment is on a host the source does not use for attachments: not fetched',
      },
    ]);
    // Kept ones were not fetched again; the other host was never asked.
    expect([fetched('desc'), fetched('reply')]).toEqual([1, 1]);
    expect(zendesk.requests.some((r) => r.path.includes('else'))).toBe(false);
    expect(await kept(a)).toHaveLength(2);

    const list = await gateway.call('GET', '/api/tickets', { key: a.apiKey });
    const uuid = (list.body.data as Json[])[0]?.uuid as string;
    const messages = (await gateway.call('GET', `/api/tickets/${uuid}/messages`, { key: a.apiKey })).body
      .data as Json[];
    const [first, second] = messages as [Json, Json];
    expect(first.attachments).toEqual([
      {
        id: expect.stringMatching(/^att_/),
        filename: 'f-desc.bin',
        content_type: 'application/pdf',
        size: 3000,
      },
    ]);
    expect(second.attachments).toEqual([
      {
        id: expect.stringMatching(/^att_/),
        filename: 'f-reply.bin',
        content_type: 'application/pdf',
        size: 9,
      },
    ]);
    expect((await download(a, uuid, first.id, first.attachments[0].id)).equals(described)).toBe(true);
    expect((await download(a, uuid, second.id, second.attachments[0].id)).equals(replied)).toBe(true);

    // Changed at the source and written again: updated, its attachments found kept, none fetched nor stored again.
    const again = await drive(writeTickets(ctx, [{ type: 'tickets', ticket: ticket('Fire!') }]));
    expect(again.counts.tickets).toMatchObject({ updated: 1 });
    expect(again.counts.attachments).toMatchObject({ created: 0, unchanged: 2, failed: 2 });
    expect([fetched('desc'), fetched('reply')]).toEqual([1, 1]);
    expect(await kept(a)).toHaveLength(2);
    const after = (await gateway.call('GET', `/api/tickets/${uuid}/messages`, { key: a.apiKey })).body.data;
    expect((after as Json[])[1]?.attachments).toEqual(second.attachments);
  });

  it('without a copier (a source with no attachment host) a run makes each an error row, fetching nothing', async () => {
    const a = await createTestAccount({ ticket_prefix: 'AN' });
    const before = zendesk.requests.length;
    const ctx = { ...ctxOf(a), attachments: undefined };
    const written = await writeTickets(ctx, [{ type: 'tickets', ticket: ticket('Fire') }]);
    expect(written.counts.tickets).toMatchObject({ created: 1 });
    expect(written.counts.attachments).toEqual({
      source: 4,
      created: 0,
      updated: 0,
      unchanged: 0,
      failed: 4,
    });
    expect(written.errors.filter((e) => e.type === 'attachments').map((e) => e.reason)).toEqual(
      Array(4).fill('The source has no host attachments are fetched from: not copied'),
    );
    expect(zendesk.requests.length).toBe(before);
  });
});

describe("the engine's copier (lib/imports/engine.ts)", () => {
  it("copies a run's attachments from its source's files into the mail store (an ndjson file's own lines too); none for a validate run or a source without files", () => {
    const reader = zendeskSource({
      ...{ subdomain: 'acme', email: ZENDESK_EMAIL, apiToken: ZENDESK_TOKEN },
      env: { IMPORT_ZENDESK_URL: zendesk.url },
    });
    const job = { accountId: 'a', id: 'imp_1', source: 'zendesk', mode: 'run' } as ImportJob;
    expect(copierFor(job, reader)).toBeDefined();
    expect(copierFor({ ...job, mode: 'validate' }, reader)).toBeUndefined();
    expect(copierFor({ ...job, source: 'ndjson' }, { source: 'ndjson', page: reader.page })).toBeUndefined();
    const file = ndjsonSource({ size: async () => 0, read: async () => new Uint8Array() });
    expect(copierFor({ ...job, source: 'ndjson' }, file)).toBeDefined();
    expect(copierFor({ ...job, source: 'ndjson', mode: 'validate' }, file)).toBeUndefined();
  });
});
