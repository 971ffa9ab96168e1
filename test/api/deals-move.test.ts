import { describe, expect, it } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/** Deals that move, their contacts, and the pipeline board (decisions.md, "Deals that move"). */
const gateway = useGateway();

const stages = (names: string[], probabilities: number[]) =>
  names.map((name, i) => ({ name, color: `#00000${i}`, probability: probabilities[i] ?? 0 }));
const pipelines = [
  { name: 'Sales', default: true, stages: stages(['Lead', 'Proposal', 'Closing'], [10, 35, 80]) },
  { name: 'Renewals', stages: stages(['Upcoming', 'Signed'], [50, 90]) },
  { name: 'Paused', active: false, stages: stages(['Idle'], [5]) },
];

async function setUp() {
  const account = await createTestAccount({
    pipelines,
    contacts: [{ email: 'kim@client.test', first_name: 'Kim', last_name: 'Known' }],
  });
  const key = account.apiKey;
  const sales = account.pipelines.find((p) => p.name === 'Sales');
  const renewals = account.pipelines.find((p) => p.name === 'Renewals');
  const paused = account.pipelines.find((p) => p.name === 'Paused');
  if (!sales || !renewals || !paused) throw new Error('pipelines missing');
  const create = async (body: Record<string, unknown>) => {
    const r = await gateway.call('POST', '/api/deals', {
      key,
      body: { contact_email: 'kim@client.test', ...body },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data as { uuid: string };
  };
  const patch = (uuid: string, body: unknown, headers?: Record<string, string>) =>
    gateway.call('PATCH', `/api/deals/${uuid}`, { key, body, ...(headers ? { headers } : {}) });
  const get = (path: string) => gateway.call('GET', path, { key });
  return { account, key, sales, renewals, paused, create, patch, get };
}

describe('GET and PATCH /api/deals/{deal}', () => {
  it('moves a deal through stages, wins, loses and reopens it, with its timestamps and probability', async () => {
    const { sales, renewals, create, patch, get } = await setUp();
    const deal = await create({ name: 'Annual plan', amount: 4800, currency: 'eur' });

    const read = await get(`/api/deals/${deal.uuid}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe('"1"');
    expect(read.body.data).toMatchObject({
      uuid: deal.uuid,
      status: 'open',
      probability: 10,
      expected_close_date: null,
      lost_reason: null,
      won_at: null,
      lost_at: null,
      contact: { full_name: 'Kim Known', email: 'kim@client.test' },
    });

    const moved = await patch(deal.uuid, { stage_id: sales.stages[1]?.id });
    expect(moved.status).toBe(200);
    expect(moved.headers.get('etag')).toBe('"2"');
    expect(moved.body.message).toBe('Deal updated successfully.');
    expect(moved.body.data).toMatchObject({ probability: 35, stage: { name: 'Proposal' }, status: 'open' });

    const won = await patch(deal.uuid, { status: 'won' });
    expect(won.body.data).toMatchObject({ status: 'won', probability: 100, lost_at: null });
    expect(won.body.data.won_at).toMatch(/Z$/);

    const lost = await patch(deal.uuid, { status: 'lost', lost_reason: 'Budget cut' });
    expect(lost.body.data).toMatchObject({
      status: 'lost',
      probability: 0,
      won_at: null,
      lost_reason: 'Budget cut',
    });

    // A lost deal may move stage too, and keeps its status.
    const movedLost = await patch(deal.uuid, { stage_id: renewals.stages[0]?.id });
    expect(movedLost.body.data).toMatchObject({
      status: 'lost',
      probability: 0,
      pipeline: { name: 'Renewals' },
    });

    const reopened = await patch(deal.uuid, { status: 'open' });
    expect(reopened.body.data).toMatchObject({
      status: 'open',
      probability: 50,
      won_at: null,
      lost_at: null,
      lost_reason: null,
    });

    // Unchanged: 200, nothing written (the ETag stays).
    const same = await patch(deal.uuid, { status: 'open' });
    expect(same.status).toBe(200);
    expect(same.headers.get('etag')).toBe(reopened.headers.get('etag'));

    // If-Match with an old ETag: 412, nothing changed.
    const stale = await patch(deal.uuid, { name: 'Renamed' }, { 'If-Match': '"1"' });
    expect(stale.status).toBe(412);
    expect((await get(`/api/deals/${deal.uuid}`)).body.data.name).toBe('Annual plan');
  });

  it('refuses bad changes with a 422 naming the field, and writes nothing', async () => {
    const { sales, renewals, paused, create, patch, get } = await setUp();
    const deal = await create({ name: 'Careful', amount: 10 });
    const cases: [unknown, string][] = [
      [{}, 'body'],
      [{ lost_reason: 'Too early' }, 'lost_reason'],
      [{ amount: -1 }, 'amount'],
      [{ amount: 1.23456 }, 'amount'],
      [{ currency: 'XYZ' }, 'currency'],
      [{ expected_close_date: '2027-02-30' }, 'expected_close_date'],
      [{ stage_id: paused.stages[0]?.id }, 'stage_id'],
      [{ pipeline_id: sales.id, stage_id: renewals.stages[0]?.id }, 'stage_id'],
      [{ stage_id: 999999 }, 'stage_id'],
      [{ status: 'done' }, 'status'],
    ];
    for (const [body, field] of cases) {
      const r = await patch(deal.uuid, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(r.body.errors), JSON.stringify(body)).toContain(field);
    }
    const after = await get(`/api/deals/${deal.uuid}`);
    expect(after.headers.get('etag')).toBe('"1"');
  });

  it('answers 404 for an unknown, malformed or other account deal, contact or pipeline', async () => {
    const mine = await setUp();
    const other = await setUp();
    const deal = await other.create({ name: 'Theirs' });
    for (const path of [
      `/api/deals/${deal.uuid}`,
      '/api/deals/not-a-uuid',
      '/api/deals/00000000-0000-8000-8000-000000000000',
    ]) {
      expect((await mine.get(path)).status, path).toBe(404);
      expect((await mine.patch(path.slice('/api/deals/'.length), { name: 'x' })).status, path).toBe(404);
    }
    expect((await mine.get('/api/pipelines/999999/board')).status).toBe(404);
    expect((await mine.get('/api/pipelines/abc/board')).status).toBe(404);
    // Contacts: another account's (by its real uuid), malformed, unknown.
    const theirs = (await other.get('/api/contacts?email=kim@client.test')).body.data[0].uuid as string;
    for (const ref of [theirs, 'not-a-uuid', '00000000-0000-8000-8000-000000000000']) {
      expect((await mine.get(`/api/contacts/${ref}`)).status, ref).toBe(404);
      const patched = await gateway.call('PATCH', `/api/contacts/${ref}`, {
        key: mine.key,
        body: { first_name: 'X' },
      });
      expect(patched.status, ref).toBe(404);
    }
    expect((await other.get(`/api/contacts/${theirs}`)).body.data.first_name).toBe('Kim');
    expect((await mine.get(`/api/pipelines/${other.sales.id}/board`)).status).toBe(
      other.sales.id === mine.sales.id ? 200 : 404,
    );
  });
});

describe('GET /api/deals', () => {
  it('filters by pipeline, stage, status, currency, contact e-mail and search, with exact totals', async () => {
    const { sales, renewals, create, patch, get } = await setUp();
    const a = await create({ name: 'Alpha rollout', amount: 100, currency: 'usd' });
    const b = await create({ name: 'Beta renewal', amount: 200, pipeline_id: renewals.id });
    const c = await create({
      name: 'Gamma',
      amount: 300,
      contact_email: 'nora@new.test',
      contact_first_name: 'Nora',
      contact_last_name: 'Newman',
    });
    await patch(c.uuid, { status: 'won' });
    const uuids = async (query: string) => {
      const r = await get(`/api/deals${query}`);
      expect(r.status, query).toBe(200);
      expect(r.body.meta.total, query).toBe(r.body.data.length);
      return r.body.data.map((d: { uuid: string }) => d.uuid);
    };
    expect(await uuids('')).toEqual([c.uuid, b.uuid, a.uuid]);
    expect(await uuids(`?pipeline_id=${sales.id}`)).toEqual([c.uuid, a.uuid]);
    expect(await uuids(`?stage_id=${renewals.stages[0]?.id}`)).toEqual([b.uuid]);
    expect(await uuids('?status=open')).toEqual([b.uuid, a.uuid]);
    expect(await uuids(`?status=open&pipeline_id=${sales.id}`)).toEqual([a.uuid]);
    expect(await uuids('?currency=usd')).toEqual([a.uuid]);
    expect(await uuids('?contact_email=KIM@client.test')).toEqual([b.uuid, a.uuid]);
    expect(await uuids('?contact_email=nobody@client.test')).toEqual([]);
    expect(await uuids('?search=alp')).toEqual([a.uuid]);
    // The contact's name and e-mail find its deals, as the contact is now.
    expect(await uuids('?search=newm')).toEqual([c.uuid]);
    expect(await uuids('?search=kim%20beta')).toEqual([b.uuid]);
    expect((await get('/api/deals?status=done')).status).toBe(422);
    expect((await get('/api/deals?per_page=101')).status).toBe(422);
    expect((await get('/api/deals?status=open&status=won')).status).toBe(422);
  });
});

describe('contacts', () => {
  it('reads, renames and re-emails a contact; its deals show it as it is now', async () => {
    const { create, get, key } = await setUp();
    const deal = await create({ name: 'Kim deal' });
    const list = await get('/api/contacts?email=kim@client.test');
    expect(list.status).toBe(200);
    expect(list.body.meta.total).toBe(1);
    const contact = list.body.data[0];
    expect(contact).toMatchObject({ first_name: 'Kim', full_name: 'Kim Known', open_deals_count: 1 });

    const one = await get(`/api/contacts/${contact.uuid}`);
    expect(one.status).toBe(200);
    expect(one.headers.get('etag')).toBe('"1"');

    const renamed = await gateway.call('PATCH', `/api/contacts/${contact.uuid}`, {
      key,
      body: { first_name: 'Kimberly', email: 'kimberly@client.test' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ full_name: 'Kimberly Known', email: 'kimberly@client.test' });

    const shown = await get(`/api/deals/${deal.uuid}`);
    expect(shown.body.data.contact).toEqual({
      uuid: contact.uuid,
      full_name: 'Kimberly Known',
      email: 'kimberly@client.test',
    });
    expect((await get('/api/deals?search=kimberly')).body.meta.total).toBe(1);
    expect((await get('/api/deals?contact_email=kimberly@client.test')).body.meta.total).toBe(1);
    expect((await get('/api/contacts?search=kimb')).body.meta.total).toBe(1);
    // The old e-mail is free again: a deal for it creates a new contact.
    const fresh = await create({ name: 'Old e-mail', contact_first_name: 'Other' });
    expect((await get(`/api/deals/${fresh.uuid}`)).body.data.contact.full_name).toBe('Other');
  });

  it('keeps e-mails unique: a PATCH to a taken e-mail is a 422 on email', async () => {
    const { create, get, key } = await setUp();
    await create({ name: 'One', contact_email: 'a@x.test', contact_first_name: 'A' });
    await create({ name: 'Two', contact_email: 'b@x.test', contact_first_name: 'B' });
    const b = (await get('/api/contacts?email=b@x.test')).body.data[0];
    const taken = await gateway.call('PATCH', `/api/contacts/${b.uuid}`, {
      key,
      body: { email: 'A@x.test' },
    });
    expect(taken.status).toBe(422);
    expect(Object.keys(taken.body.errors)).toEqual(['email']);
    expect((await get(`/api/contacts/${b.uuid}`)).body.data.email).toBe('b@x.test');
  });
});

describe('GET /api/pipelines/{pipeline}/board', () => {
  it('sums open deals per stage and currency exactly, and the won and lost ones', async () => {
    const { sales, create, patch, get } = await setUp();
    for (let i = 0; i < 10; i++) await create({ name: `Tenth ${i}`, amount: 0.1 });
    await create({ name: 'Dollars', amount: 19.99, currency: 'usd', stage_id: sales.stages[1]?.id });
    const won = await create({ name: 'Won', amount: 1000 });
    await patch(won.uuid, { status: 'won' });
    const lost = await create({ name: 'Lost', amount: 0.3, currency: 'usd' });
    await patch(lost.uuid, { status: 'lost' });

    const board = await get(`/api/pipelines/${sales.id}/board`);
    expect(board.status).toBe(200);
    expect(board.body.data.pipeline).toEqual({ id: sales.id, name: 'Sales' });
    const [lead, proposal, closing] = board.body.data.stages;
    expect(lead).toMatchObject({
      name: 'Lead',
      count: 10,
      totals: [{ currency: 'EUR', amount: 1, weighted: 0.1 }],
    });
    expect(proposal).toMatchObject({
      name: 'Proposal',
      count: 1,
      totals: [{ currency: 'USD', amount: 19.99, weighted: 6.9965 }],
    });
    expect(closing).toMatchObject({ count: 0, totals: [] });
    expect(board.body.data.won).toEqual({ count: 1, totals: [{ currency: 'EUR', amount: 1000 }] });
    expect(board.body.data.lost).toEqual({ count: 1, totals: [{ currency: 'USD', amount: 0.3 }] });
  });
});
