import { describe, expect, it } from 'vitest';
import { handler as createDeal } from '#functions/deals-create.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { countRoundTrips } from '#test/support/round-trips.ts';

const gateway = useGateway();

const stages = (names: string[]) =>
  names.map((name, i) => ({ name, color: `#00000${i}`, probability: (i + 1) * 10 }));
const pipelines = [
  { name: 'Sales', default: true, stages: stages(['Lead', 'Won']) },
  { name: 'Renewals', stages: stages(['Upcoming', 'Renewed']) },
  { name: 'Paused', active: false, stages: stages(['Idle']) },
];
const newContact = {
  name: 'Big deal',
  contact_email: 'new@client.test',
  contact_first_name: 'Nora',
  contact_last_name: 'New',
};

async function post(key: string, body: unknown) {
  return gateway.call('POST', '/api/deals', { key, body });
}

describe('POST /api/deals', () => {
  it('creates a deal on the default pipeline first stage with a new contact', async () => {
    const account = await createTestAccount({ pipelines });
    const response = await post(account.apiKey, {
      ...newContact,
      amount: 1200.5,
      currency: 'usd',
      expected_close_date: '2027-02-28',
      contact_phone: '+1 555',
    });
    expect(response.status).toBe(201);
    const sales = account.pipelines.find((p) => p.name === 'Sales');
    expect(response.body).toEqual({
      data: {
        uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'Big deal',
        amount: 1200.5,
        currency: 'USD',
        status: 'open',
        probability: 10,
        pipeline: { id: sales?.id, name: 'Sales' },
        stage: { id: sales?.stages[0]?.id, name: 'Lead', color: '#000000' },
        contact: { uuid: expect.any(String), full_name: 'Nora New', email: 'new@client.test' },
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      },
    });
  });

  it('defaults amount to 0 and currency to EUR, and ignores unknown fields', async () => {
    const account = await createTestAccount();
    const response = await post(account.apiKey, {
      ...newContact,
      contact_last_name: undefined,
      colour: 'red',
    });
    expect(response.body.data).toMatchObject({ amount: 0, currency: 'EUR', contact: { full_name: 'Nora' } });
    expect(response.body.data.colour).toBeUndefined();
  });

  it('attaches to an existing contact found case-insensitively and never changes it', async () => {
    const account = await createTestAccount({
      contacts: [{ email: 'Kim@Client.test', first_name: 'Kim', last_name: 'Known' }],
    });
    const response = await post(account.apiKey, {
      name: 'Renewal',
      contact_email: 'kim@CLIENT.test',
      contact_first_name: 'Other',
      contact_last_name: 'Name',
    });
    expect(response.status).toBe(201);
    expect(response.body.data.contact).toEqual({
      uuid: account.contacts[0]?.uuid,
      full_name: 'Kim Known',
      email: 'Kim@Client.test',
    });
    const again = await applyAccountFile({
      slug: account.slug,
      name: account.account.name,
      plan: 'pro',
      contacts: [{ email: 'kim@client.test', first_name: 'Kim', last_name: 'Known' }],
    });
    expect(again.contacts[0]).toMatchObject({
      id: account.contacts[0]?.id,
      first_name: 'Kim',
      last_name: 'Known',
    });
  });

  it('resolves pipeline and stage combinations', async () => {
    const account = await createTestAccount({ pipelines });
    const [sales, renewals, paused] = ['Sales', 'Renewals', 'Paused'].map((n) =>
      account.pipelines.find((p) => p.name === n),
    );
    const renewed = renewals?.stages[1];
    const stageAlone = await post(account.apiKey, { ...newContact, stage_id: renewed?.id });
    expect(stageAlone.body.data).toMatchObject({
      pipeline: { id: renewals?.id },
      stage: { id: renewed?.id },
      probability: 20,
    });
    const pipelineAlone = await post(account.apiKey, { ...newContact, pipeline_id: renewals?.id });
    expect(pipelineAlone.body.data).toMatchObject({
      pipeline: { id: renewals?.id },
      stage: { name: 'Upcoming' },
    });
    const both = await post(account.apiKey, {
      ...newContact,
      pipeline_id: sales?.id,
      stage_id: sales?.stages[1]?.id,
    });
    expect(both.body.data).toMatchObject({ stage: { name: 'Won' }, probability: 20 });

    const cases: [Record<string, unknown>, string][] = [
      [{ pipeline_id: sales?.id, stage_id: renewed?.id }, 'stage_id'],
      [{ pipeline_id: 999999 }, 'pipeline_id'],
      [{ stage_id: 999999 }, 'stage_id'],
      [{ pipeline_id: paused?.id }, 'pipeline_id'],
      [{ stage_id: paused?.stages[0]?.id }, 'stage_id'],
    ];
    for (const [patch, field] of cases) {
      const response = await post(account.apiKey, { ...newContact, ...patch });
      expect(response.status, JSON.stringify(patch)).toBe(422);
      expect(Object.keys(response.body.errors)).toEqual([field]);
    }
  });

  it("treats another account's pipeline and stage ids as unknown", async () => {
    // Ids are per account: mine has pipeline 1 with stage 1; theirs has pipelines 1-3 and stages 1-5.
    const mine = await createTestAccount({ pipelines: [{ name: 'Mine', stages: stages(['Only']) }] });
    const theirs = await createTestAccount({ pipelines });
    const foreign = theirs.pipelines.find((p) => p.name === 'Renewals');
    expect(foreign?.id).toBeGreaterThan(1);
    expect((await post(mine.apiKey, { ...newContact, pipeline_id: foreign?.id })).status).toBe(422);
    expect((await post(mine.apiKey, { ...newContact, stage_id: foreign?.stages[1]?.id })).status).toBe(422);
  });

  it.each([
    ['missing name', { name: undefined }, 'name'],
    ['long name', { name: 'n'.repeat(256) }, 'name'],
    ['negative amount', { amount: -1 }, 'amount'],
    ['non-numeric amount', { amount: 'lots' }, 'amount'],
    ['bad currency', { currency: 'EURO' }, 'currency'],
    ['unknown currency', { currency: 'XYZ' }, 'currency'],
    ['impossible date', { expected_close_date: '2026-02-30' }, 'expected_close_date'],
    ['wrong date format', { expected_close_date: '28/02/2027' }, 'expected_close_date'],
    ['missing e-mail', { contact_email: undefined }, 'contact_email'],
    ['invalid e-mail', { contact_email: 'nope' }, 'contact_email'],
    ['new contact without first name', { contact_first_name: undefined }, 'contact_first_name'],
    ['non-integer pipeline', { pipeline_id: 'abc' }, 'pipeline_id'],
  ])('answers 422 for %s on its field', async (_label, patch, field) => {
    const account = await createTestAccount();
    const response = await post(account.apiKey, { ...newContact, ...patch });
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors)).toContain(field);
  });

  it('20 concurrent deals for one new e-mail create one contact and 20 deals; a later ticket links to it', async () => {
    const account = await createTestAccount();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(account.apiKey, { ...newContact, name: `Deal ${i}`, contact_email: 'race@client.test' }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(new Set(responses.map((r) => r.body.data.uuid)).size).toBe(20);
    const contactUuids = new Set(responses.map((r) => r.body.data.contact.uuid));
    expect(contactUuids.size).toBe(1);

    const ticket = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { subject: 's', description: 'd', requester_email: 'RACE@client.test' },
    });
    const state = await applyAccountFile({
      slug: account.slug,
      name: account.account.name,
      plan: 'pro',
      contacts: [{ email: 'race@client.test', first_name: 'Nora', last_name: 'New' }],
    });
    expect(state.contacts[0]?.uuid).toBe([...contactUuids][0]);
    expect(ticket.body.ticket.requester.contact_id).toBe(state.contacts[0]?.id);
  });

  // The rate count first (beside the contact read): the number's UpdateItem waits for it (a refused create takes none).
  it('takes at most 3 round trips with an existing contact, and with a new one (settings warm)', async () => {
    const account = await createTestAccount({ contacts: [{ email: 'known@client.test', first_name: 'K' }] });
    const caller = callerOf(account);
    const call = (body: Record<string, unknown>) =>
      createDeal(proxyEvent({ method: 'POST', path: '/api/deals', caller, body }), lambdaContext);
    await call({ name: 'warm', contact_email: 'known@client.test' });
    const existing = await countRoundTrips(() => call({ name: 'a', contact_email: 'known@client.test' }));
    expect(existing.result.statusCode).toBe(201);
    expect(existing.roundTrips, existing.calls.join(', ')).toBeLessThanOrEqual(3);
    const fresh = await countRoundTrips(() => call({ ...newContact, contact_email: 'fresh@client.test' }));
    expect(fresh.result.statusCode).toBe(201);
    expect(fresh.roundTrips, fresh.calls.join(', ')).toBeLessThanOrEqual(3);
  });
});
