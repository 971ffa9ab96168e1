import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimJob } from '#lib/data/imports/runs.ts';
import { UPLOAD_DIR_VARIABLE } from '#lib/data/imports/uploads.ts';
import { newSecretsKey, SECRETS_KEY_VARIABLE } from '#lib/imports/credentials.ts';
import { importPass, LEASE_MS, runImports } from '#lib/imports/runner.ts';
import { undoPage } from '#lib/imports/undo.ts';
import { nowMillis } from '#lib/time.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * `POST /api/imports/{import}/undo` (decisions.md, "Imports: moving a helpdesk in"; docs/imports.md, "Undo"): the
 * example file imported with the real writers, then undone by the runner: its tickets and contacts in the trash
 * (restorable), its teams and organizations gone, its agents retired, what it only matched untouched; 409s for an
 * undo of a job not ended and a cancel of one ended; a runner dying mid-undo resumed by another, each object once.
 */
const gateway = useGateway();
const clockNow = useManualClock({ lazy: true });
const EXAMPLE = readFileSync(new URL('../../examples/import.ndjson', import.meta.url).pathname, 'utf8');
let dir: string;

beforeAll(async () => {
  process.env[SECRETS_KEY_VARIABLE] ??= newSecretsKey();
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-import-undo-'));
  process.env[UPLOAD_DIR_VARIABLE] = dir;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => ReturnType<typeof gateway.call>;
const caller =
  (account: TestAccount): Call =>
  (method, path, body, headers) =>
    gateway.call(method, path, {
      key: account.apiKey,
      ...(body === undefined ? {} : { body }),
      ...(headers ? { headers } : {}),
    });

/** An ndjson import of the example file, uploaded (the runner not run yet). */
async function uploaded(call: Call, file: string): Promise<string> {
  const started = await call('POST', '/api/imports', { source: 'ndjson' });
  expect(started.status, started.text).toBe(202);
  expect((await fetch(started.body.data.upload_url, { method: 'PUT', body: file })).status).toBe(200);
  return started.body.data.id;
}

const drain = (owner = 'runner-a') => runImports(Number.POSITIVE_INFINITY, { owner, untilDrained: true });

/** An object as the API answers it, what these tests read of it. */
interface Shown {
  uuid: string;
  id: number;
  email: string;
  active: boolean;
  team_ids: number[];
  imported_from: { import_id: string } | null;
}

/**
 * 40 more agents of the example's team Support (inactive at the source), so that it has 42: more than a team's
 * deletion takes out with it (15), and more than one commit takes out before (23).
 */
const CROWDED = `${EXAMPLE}\n${Array.from({ length: 40 }, (_, i) =>
  JSON.stringify({
    type: 'agent',
    id: `u-${100 + i}`,
    email: `a${i}@northwind.test`,
    name: `A ${i}`,
    active: false,
    team_ids: ['grp-1'],
  }),
).join('\n')}\n`;

/** The example imported to its end: its id, and the tickets, contacts, teams and organizations it made. */
async function imported(call: Call, file = EXAMPLE) {
  const id = await uploaded(call, file);
  await drain();
  const job = (await call('GET', `/api/imports/${id}`)).body.data;
  expect(job.status).toBe('completed');
  const mine = (list: Shown[]) => list.filter((o) => o.imported_from?.import_id === id);
  return {
    id,
    job,
    tickets: mine((await call('GET', '/api/tickets?per_page=100')).body.data),
    contacts: mine((await call('GET', '/api/contacts?per_page=100')).body.data),
    teams: mine((await call('GET', '/api/teams')).body.data),
    organizations: mine((await call('GET', '/api/organizations')).body.data),
    agents: mine((await call('GET', '/api/agents')).body.data),
  };
}

const uuids = (list: { uuid: string }[]) => list.map((o) => o.uuid).sort();

describe('undoing an import', () => {
  it('trashes the tickets and contacts it created (restorable), deletes its teams and organizations, retires its agents, leaves what it matched', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    // Ours before the import: the agent Tomás (matched by e-mail: the import adds a team, nothing else).
    const tomas = await call('POST', '/api/agents', { email: 'Tomas@northwind.test', name: 'Tomás (ours)' });
    expect(tomas.status, tomas.text).toBe(201);
    const made = await imported(call);
    expect(made.tickets).toHaveLength(made.job.counts.tickets.created);
    expect(made.contacts).toHaveLength(3);
    expect(made.teams).toHaveLength(2);
    expect(made.organizations).toHaveLength(2);
    expect(made.agents.map((a) => [a.email, a.active])).toEqual([['maya@northwind.test', true]]);
    expect(made.job.counts.agents).toMatchObject({ created: 1, unchanged: 1 });
    const support = made.teams.find((t) => (t as unknown as { name: string }).name === 'Support');
    const ours = (await call('GET', `/api/agents/${tomas.body.data.id}`)).body.data;
    expect(ours).toMatchObject({ name: 'Tomás (ours)', team_ids: [support?.id], imported_from: null });
    // A cancel of the ended job is a 409; a user trashes one of its contacts and edits one of its tickets.
    expect((await call('POST', `/api/imports/${made.id}/cancel`)).status).toBe(409);
    const gone = made.contacts[0]?.uuid;
    expect((await call('DELETE', `/api/contacts/${gone}`)).status).toBe(200);
    const edited = await call('PATCH', `/api/tickets/${made.tickets[0]?.uuid}`, { subject: 'Ours now' });
    expect(edited.status, edited.text).toBe(200);

    const key = { 'Idempotency-Key': 'undo-once-1' };
    const undo = await call('POST', `/api/imports/${made.id}/undo`, undefined, key);
    expect(undo.status, undo.text).toBe(202);
    expect(undo.body.data).toMatchObject({ id: made.id, status: 'undoing', phase: 'undo' });
    const again = await call('POST', `/api/imports/${made.id}/undo`, undefined, key);
    expect([again.status, again.body]).toEqual([202, undo.body]);
    expect((await call('POST', `/api/imports/${made.id}/undo`)).status).toBe(409);
    expect((await call('POST', `/api/imports/${made.id}/cancel`)).status).toBe(409);
    // The account's one import while it is undone.
    expect((await call('POST', '/api/imports', { source: 'ndjson' })).status).toBe(409);

    await drain();
    const job = (await call('GET', `/api/imports/${made.id}`)).body.data;
    expect(job).toMatchObject({ status: 'undone', phase: 'undo', counts: made.job.counts });
    const trash = (await call('GET', '/api/trash?limit=100')).body.data;
    expect(uuids(trash.filter((t: { type: string }) => t.type === 'ticket'))).toEqual(uuids(made.tickets));
    expect(uuids(trash.filter((t: { type: string }) => t.type === 'contact'))).toEqual(uuids(made.contacts));
    expect((await call('GET', '/api/tickets?per_page=100')).body.data).toEqual([]);
    expect((await call('GET', '/api/teams')).body.data).toEqual([]);
    expect((await call('GET', '/api/organizations')).body.data).toEqual([]);
    const agents = (await call('GET', '/api/agents')).body.data;
    expect(agents.find((a: { email: string }) => a.email === 'maya@northwind.test').active).toBe(false);
    // Ours keeps its name and state; the deleted team's membership went with the team.
    expect(agents.find((a: { id: number }) => a.id === tomas.body.data.id)).toMatchObject({
      name: 'Tomás (ours)',
      active: true,
      team_ids: [],
      imported_from: null,
    });

    // Each object taken out once, by an ordinary event carrying the import's id; none for the user's own deletion.
    const feed = (await readFeedToEnd(gateway.call, account.apiKey)).events as unknown as {
      type: string;
      import_id?: string;
      data: { object: { uuid?: string; id?: number } };
    }[];
    const undone = feed.filter((e) => e.import_id === made.id && e.type.endsWith('.deleted'));
    const ticketsDeleted = undone.filter((e) => e.type === 'ticket.deleted');
    expect(ticketsDeleted.map((e) => e.data.object.uuid).sort()).toEqual(uuids(made.tickets));
    expect(undone.filter((e) => e.type === 'contact.deleted')).toHaveLength(2);
    expect(feed.filter((e) => e.type === 'contact.deleted' && e.data.object.uuid === gone)).toHaveLength(1);
    expect(undone.filter((e) => e.type === 'team.deleted')).toHaveLength(2);
    expect(undone.filter((e) => e.type === 'organization.deleted')).toHaveLength(2);

    // Restorable as any deletion; a second undo is a 409, and the account may import again.
    const restored = await call('POST', `/api/trash/${made.tickets[0]?.uuid}/restore`);
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.data.subject).toBe('Ours now');
    expect((await call('POST', `/api/imports/${made.id}/undo`)).status).toBe(409);
    expect((await call('POST', '/api/imports', { source: 'ndjson' })).status).toBe(202);
  });

  it('refuses an undo of a job not ended (queued, running) and of a validate run', async () => {
    const account = await createTestAccount();
    const call = caller(account);
    const queued = await call('POST', '/api/imports', { source: 'ndjson' });
    expect((await call('POST', `/api/imports/${queued.body.data.id}/undo`)).status).toBe(409);
    expect((await fetch(queued.body.data.upload_url, { method: 'PUT', body: EXAMPLE })).status).toBe(200);
    await importPass({ owner: 'runner-a', stepsPerJob: 1 });
    expect((await call('GET', `/api/imports/${queued.body.data.id}`)).body.data.status).toBe('running');
    const running = await call('POST', `/api/imports/${queued.body.data.id}/undo`);
    expect([running.status, running.body.message]).toEqual([
      409,
      'The import has not ended (running): cancel it, or wait for its end, before undoing it.',
    ]);
    await drain();
    const validate = await call('POST', '/api/imports', { source: 'ndjson', mode: 'validate' });
    expect((await fetch(validate.body.data.upload_url, { method: 'PUT', body: EXAMPLE })).status).toBe(200);
    await drain();
    expect((await call('POST', `/api/imports/${validate.body.data.id}/undo`)).status).toBe(409);
    expect((await call('POST', '/api/imports/imp_0000000000000aaaaaaaaaa/undo')).status).toBe(404);
  });

  it('resumes after a runner dies mid-undo: every object undone once, the job undone; a team of 42 agents deleted', async () => {
    const clock = clockNow();
    const account = await createTestAccount();
    const call = caller(account);
    const made = await imported(call, CROWDED);
    const support = made.teams.find((t) => (t as unknown as { name: string }).name === 'Support');
    expect((await call('GET', `/api/teams/${support?.id}`)).body.data.agent_ids).toHaveLength(42);
    expect((await call('POST', `/api/imports/${made.id}/undo`)).status).toBe(202);
    // Runner-a takes the job, undoes its first page (the tickets) and dies before saving it.
    const claimed = await claimJob(
      account.accountId,
      made.id,
      'runner-a',
      nowMillis() + LEASE_MS,
      nowMillis(),
    );
    if (!claimed) throw new Error('the undoing job was not due');
    expect(await undoPage(claimed)).toBe('contacts#');
    expect((await call('GET', '/api/tickets?per_page=100')).body.data).toEqual([]);
    await drain('runner-b');
    expect((await call('GET', `/api/imports/${made.id}`)).body.data.status).toBe('undoing');
    await clock.advance(LEASE_MS + 1_000);
    await drain('runner-b');
    expect((await call('GET', `/api/imports/${made.id}`)).body.data.status).toBe('undone');
    const feed = (await readFeedToEnd(gateway.call, account.apiKey)).events as unknown as {
      type: string;
      import_id?: string;
    }[];
    const count = (type: string) => feed.filter((e) => e.type === type && e.import_id === made.id).length;
    expect([count('ticket.deleted'), count('contact.deleted')]).toEqual([made.tickets.length, 3]);
    expect([count('team.deleted'), count('organization.deleted')]).toEqual([2, 2]);
    const trash = (await call('GET', '/api/trash?limit=100')).body.data;
    expect(trash).toHaveLength(made.tickets.length + 3);
    expect((await call('GET', '/api/teams')).body.data).toEqual([]);
    const rows = (await call('GET', `/api/imports/${made.id}/errors?limit=100`)).body.data;
    expect(rows.filter((r: { reason: string }) => r.reason.startsWith('Not undone'))).toEqual([]);
  });
});
