import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { closeSourceConnections } from '#lib/imports/http.ts';
import type { ImportRecord } from '#lib/imports/records.ts';
import { importPass, LEASE_MS } from '#lib/imports/runner.ts';
import { freshdeskSource } from '#lib/imports/sources/freshdesk.ts';
import { IMPORT_WRITERS, type ImportWriters } from '#lib/imports/writers.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { startFreshdeskServer } from '#test/support/vendors/freshdesk.ts';
import { archiveTickets, freshdeskData } from '#test/support/vendors/freshdesk-data.ts';
import { onClock, type VendorServer } from '#test/support/vendors/server.ts';

/**
 * A Freshdesk import whose helpdesk has archived tickets (issue 42: an importer must not "lose … archived tickets";
 * docs/imports.md, "Archived tickets"), run by the runner with the real writers into DynamoDB Local: the archived
 * tickets, in no list, are found in the ids' gaps and imported closed with their conversations, once; the runner
 * dying after writing a page of the walk reads on from the walk's checkpoint (the last probed id) with no
 * duplicate; the same import again is all `unchanged`.
 */
const gateway = useGateway();
const clock = useManualClock();
// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;
const API_KEY = 'fd-archived-key-0123456789';
/** Of tickets 1–10: 2, 5 and 8 archived, 6 deleted; the list gives 1, 3, 4, 7, 9, 10. */
const ARCHIVED = ['2', '5', '8'];
let server: VendorServer;

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  const data = archiveTickets(freshdeskData({ count: 10, sharedRun: 2 }), [2, 5, 8], [6]);
  server = await startFreshdeskServer({ apiKey: API_KEY, data, ratePerMinute: 600_000 });
});
afterAll(async () => {
  await server?.close();
  await closeSourceConnections();
});

/** One import run to its end by a runner whose reader reads 3 a page (so the walk takes two pages). */
async function runImport(account: TestAccount, writers: ImportWriters = IMPORT_WRITERS): Promise<Json> {
  const body = { source: 'freshdesk', domain: 'acme', api_key: API_KEY, rate_share: 1 };
  const started = await gateway.call('POST', '/api/imports', { key: account.apiKey, body });
  expect(started.status, started.text).toBe(202);
  const id = started.body.data.id as string;
  const env = { IMPORT_FRESHDESK_URL: server.url };
  const reader = freshdeskSource({ domain: 'acme', apiKey: API_KEY, rateShare: 1, env, perPage: 3 });
  const readers = new Map([[id, reader]]);
  for (let pass = 0; pass < 50; pass++) {
    await onClock(clock(), importPass({ owner: 'runner-fd', writers, readers }));
    const job = (await gateway.call('GET', `/api/imports/${id}`, { key: account.apiKey })).body.data;
    if (job.status !== 'running' && job.status !== 'queued') return job;
    // A step that threw leaves the job to its lease's end (a runner that died): past it.
    await clock().advance(LEASE_MS + 1_000);
  }
  throw new Error('the import never ended');
}

const probes = () =>
  server.requests.flatMap((r) => /^\/api\/v2\/tickets\/archived\/(\d+)$/.exec(r.path)?.[1] ?? []);

describe('a Freshdesk import with archived tickets', () => {
  it('imports them closed with their conversations, once, across a crash mid-walk; again, all unchanged', async () => {
    const account = await createTestAccount();
    // The runner dies once, after writing the walk's second page (ticket 8), before its checkpoint is saved.
    let died = false;
    const dying: ImportWriters = {
      ...IMPORT_WRITERS,
      tickets: async (ctx, records: ImportRecord[]) => {
        const written = await IMPORT_WRITERS.tickets(ctx, records);
        if (!died && records.some((r) => r.type === 'tickets' && r.ticket.sourceId === '8')) {
          died = true;
          throw new Error('the runner died after writing this page');
        }
        return written;
      },
    };
    const first = await runImport(account, dying);
    expect(died).toBe(true);
    expect(first.status, JSON.stringify(first)).toBe('completed');
    // Six listed and three archived; 8 read again after the crash, found as its page's first attempt wrote it:
    // still counted created (docs/imports.md, "Counts across a crash").
    expect(first.counts.tickets).toEqual({ source: 9, created: 9, updated: 0, unchanged: 0, failed: 0 });
    // The gaps 2, 5, 6 probed once (the first page of the walk, saved); 8 twice (its page read again).
    expect(probes()).toEqual(['2', '5', '6', '8', '8']);

    const listed = await gateway.call('GET', '/api/tickets?limit=50', { key: account.apiKey });
    expect(listed.status, listed.text).toBe(200);
    const tickets = listed.body.data as Json[];
    const sources = tickets.map((t) => t.imported_from?.id as string);
    expect([...sources].sort((a, b) => Number(a) - Number(b))).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '7',
      '8',
      '9',
      '10',
    ]);
    for (const sourceId of ARCHIVED) {
      const ticket = tickets.find((t) => t.imported_from?.id === sourceId) as Json;
      expect(ticket).toMatchObject({ status: 'closed', subject: `Ticket ${sourceId}` });
      const messages = await gateway.call('GET', `/api/tickets/${ticket.uuid}/messages?limit=100`, {
        key: account.apiKey,
      });
      expect(messages.status, messages.text).toBe(200);
      expect(messages.body.data.map((m: Json) => m.body)).toEqual([
        `Help with ${sourceId}`,
        `Reply 1 on ${sourceId}`,
      ]);
    }

    const asked = probes().length;
    const again = await runImport(account);
    expect(again.status).toBe('completed');
    expect(again.counts.tickets).toEqual({ source: 9, created: 0, updated: 0, unchanged: 9, failed: 0 });
    expect(probes().slice(asked)).toEqual(['2', '5', '6', '8']);
  });
});
