import { describe, expect, it } from 'vitest';
import { handler as clearingFunction } from '#functions/organization-clearing.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { getClearing } from '#lib/data/organizations/clearing.ts';
import { CLEARING_STEP } from '#lib/organizations/clearing.ts';
import { clearingPass, runClearings } from '#lib/organizations/clearing-runner.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { ticketsThrough } from '#test/support/tickets.ts';

/**
 * A ticket's and a contact's `organization` (decisions.md, "People: agents, teams and organizations"): set when it
 * is made (the requester's contact's, else the one owning the address's domain; none for a free-mail address),
 * kept when the organization's domains change, changed by PATCH `organization_id` (another account's or an unknown
 * id a 422 writing nothing), the `organization_id` filter with exact totals beside the other filters, and the name
 * read as it is now.
 */
const gateway = useGateway();
const tickets = ticketsThrough(gateway);

type Org = { id: number; name: string };

async function setUp() {
  const account = await createTestAccount();
  const key = account.apiKey;
  const call = (method: string, path: string, body?: unknown) =>
    gateway.call(method, path, { key, ...(body !== undefined ? { body } : {}) });
  const organization = async (name: string, domains: string[]): Promise<Org> => {
    const answer = await call('POST', '/api/organizations', { name, domains });
    expect(answer.status, answer.text).toBe(201);
    return { id: answer.body.data.id, name: answer.body.data.name };
  };
  /** A contact made with a deal (the route that makes contacts), found again by its address. */
  const contact = async (email: string) => {
    const made = await call('POST', '/api/deals', {
      name: 'Deal',
      contact_email: email,
      contact_first_name: 'C',
    });
    expect(made.status, made.text).toBe(201);
    const found = await call('GET', `/api/contacts?email=${encodeURIComponent(email)}`);
    return found.body.data[0] as { uuid: string; organization: Org | null };
  };
  return { account, key, call, organization, contact };
}

const events = async (account: TestAccount, types: string[]) =>
  (await readFeedToEnd(gateway.call, account.apiKey, { types })).events;

describe('organization on tickets', () => {
  it("is set from the requester's domain, none for a free-mail or unknown domain; IDN forms alike", async () => {
    const { key, organization } = await setUp();
    const acme = await organization('Acme', ['acme.example', 'bücher.example']);
    const byDomain = await tickets.create(key, { requester_email: 'Jo@ACME.example' });
    expect(byDomain.organization).toEqual(acme);
    const idn = await tickets.create(key, { requester_email: 'jo@xn--bcher-kva.example' });
    expect(idn.organization).toEqual(acme);
    const freeMail = await tickets.create(key, { requester_email: 'jo@gmail.com' });
    expect(freeMail.organization).toBeNull();
    const unknown = await tickets.create(key, { requester_email: 'jo@elsewhere.example' });
    expect(unknown.organization).toBeNull();
    expect((await tickets.current(key, byDomain.uuid)).ticket.organization).toEqual(acme);
  });

  it("is the requester's contact's organization before the domain's, and kept when the domains change", async () => {
    const { key, call, organization, contact } = await setUp();
    const acme = await organization('Acme', ['acme.example']);
    const globex = await organization('Globex', ['globex.example']);
    const person = await contact('pat@acme.example');
    expect(person.organization).toEqual(acme);
    // The contact is moved to Globex: its tickets follow the contact, not the domain.
    const moved = await call('PATCH', `/api/contacts/${person.uuid}`, { organization_id: globex.id });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.organization).toEqual(globex);
    const ticket = await tickets.create(key, { requester_email: 'pat@acme.example' });
    expect(ticket.organization).toEqual(globex);

    const before = await tickets.create(key, { requester_email: 'kim@acme.example' });
    expect(before.organization).toEqual(acme);
    // Acme gives its domain up: what it was set on keeps it; what is made from then on does not.
    expect((await call('PATCH', `/api/organizations/${acme.id}`, { domains: [] })).status).toBe(200);
    expect((await tickets.current(key, before.uuid)).ticket.organization).toEqual(acme);
    const after = await tickets.create(key, { requester_email: 'lee@acme.example' });
    expect(after.organization).toBeNull();
  });

  it("PATCH organization_id sets and clears it; an unknown or another account's id is a 422 writing nothing", async () => {
    const mine = await setUp();
    const theirs = await setUp();
    const acme = await mine.organization('Acme', ['acme.example']);
    // Ids are each account's own sequence: theirs has ids this account has not handed out.
    await theirs.organization('T1', ['t1.example']);
    const their = await theirs.organization('T2', ['t2.example']);
    const ticket = await tickets.create(mine.key, { requester_email: 'jo@elsewhere.example' });

    const set = await tickets.update(mine.key, ticket.uuid, { organization_id: acme.id });
    expect(set.organization).toEqual(acme);
    const { etag } = await tickets.current(mine.key, ticket.uuid);
    for (const id of [their.id, 999_999, 0, 'x']) {
      const refused = await tickets.patch(mine.key, ticket.uuid, { organization_id: id });
      expect(refused.status, String(id)).toBe(422);
      expect(Object.keys(refused.body.errors)).toEqual(['organization_id']);
    }
    expect((await tickets.current(mine.key, ticket.uuid)).etag).toBe(etag);
    const cleared = await tickets.update(mine.key, ticket.uuid, { organization_id: null });
    expect(cleared.organization).toBeNull();
    expect((await tickets.list(mine.key, `organization_id=${acme.id}`)).total).toBe(0);

    const updates = await events(mine.account, ['ticket.updated']);
    expect(updates.map((e) => e.data.object.organization)).toEqual([acme, null]);
  });

  it('organization_id filters with exact totals, combined with status and search', async () => {
    const { key, organization } = await setUp();
    const acme = await organization('Acme', ['acme.example']);
    const globex = await organization('Globex', ['globex.example']);
    const made: { uuid: string; organization: Org }[] = [];
    const at = (i: number) => made[i] as { uuid: string; organization: Org };
    for (let i = 0; i < 6; i++) {
      const domain = i % 3 === 2 ? 'globex.example' : 'acme.example';
      made.push(
        await tickets.create(key, {
          requester_email: `p${i}@${domain}`,
          subject: i < 3 ? 'Refund' : 'Login',
        }),
      );
    }
    await tickets.update(key, at(0).uuid, { status: 'resolved' });
    const acmeOnes = made
      .filter((t) => t.organization.id === acme.id)
      .map((t) => t.uuid)
      .reverse();
    expect(await tickets.list(key, `organization_id=${acme.id}`)).toMatchObject({
      total: 4,
      uuids: acmeOnes,
    });
    expect((await tickets.list(key, `organization_id=${globex.id}`)).total).toBe(2);
    const open = await tickets.list(key, `organization_id=${acme.id}&status=open`);
    expect(open).toMatchObject({ total: 3, uuids: acmeOnes.filter((u) => u !== at(0).uuid) });
    const refunds = await tickets.list(key, `organization_id=${acme.id}&search=refund`);
    expect(refunds.uuids.sort()).toEqual([at(0).uuid, at(1).uuid].sort());
    expect(refunds.total).toBe(2);
    const both = await tickets.list(key, `organization_id=${acme.id}&status=open&search=refund`);
    expect(both).toMatchObject({ total: 1, uuids: [at(1).uuid] });
    expect((await tickets.list(key, 'organization_id=999')).total).toBe(0);
    const bad = await gateway.call('GET', '/api/tickets?organization_id=abc', { key });
    expect(bad.status).toBe(422);
  });

  it("reads the organization's name as it is now, after a rename, in a GET, a list, a PATCH's answer", async () => {
    const { key, call, organization } = await setUp();
    const acme = await organization('Acme', ['acme.example']);
    const ticket = await tickets.create(key, { requester_email: 'jo@acme.example' });
    expect((await call('PATCH', `/api/organizations/${acme.id}`, { name: 'Acme Worldwide' })).status).toBe(
      200,
    );
    const renamed = { id: acme.id, name: 'Acme Worldwide' };
    expect((await tickets.current(key, ticket.uuid)).ticket.organization).toEqual(renamed);
    expect((await tickets.list(key, '')).data[0].organization).toEqual(renamed);
    expect((await tickets.update(key, ticket.uuid, { priority: 'high' })).organization).toEqual(renamed);
  });

  it('is read with tickets:read alone', async () => {
    const { account, organization } = await setUp();
    await organization('Acme', ['acme.example']);
    const ticket = await tickets.create(account.apiKey, { requester_email: 'jo@acme.example' });
    const reader = (await createKey(account.accountId, { name: 'r', scopes: ['tickets:read'] as never }))
      .api_key;
    expect((await tickets.current(reader, ticket.uuid)).ticket.organization.name).toBe('Acme');
    expect((await tickets.list(reader, '')).data[0].organization.name).toBe('Acme');
  });
});

describe('organization on contacts', () => {
  it("is set from the address's domain when the contact is made; PATCH sets and clears it", async () => {
    const mine = await setUp();
    const theirs = await setUp();
    const acme = await mine.organization('Acme', ['acme.example']);
    const globex = await mine.organization('Globex', ['globex.example']);
    const their = await theirs.organization('T1', ['t1.example']);
    expect((await mine.contact('a@acme.example')).organization).toEqual(acme);
    const free = await mine.contact('a@gmail.com');
    expect(free.organization).toBeNull();
    const set = await mine.call('PATCH', `/api/contacts/${free.uuid}`, { organization_id: globex.id });
    expect(set.body.data.organization).toEqual(globex);
    for (const id of [their.id + 10, 12345]) {
      const refused = await mine.call('PATCH', `/api/contacts/${free.uuid}`, { organization_id: id });
      expect(refused.status, String(id)).toBe(422);
      expect(Object.keys(refused.body.errors)).toEqual(['organization_id']);
    }
    expect((await mine.call('PATCH', `/api/organizations/${globex.id}`, { name: 'Globex Inc' })).status).toBe(
      200,
    );
    expect((await mine.call('GET', `/api/contacts/${free.uuid}`)).body.data.organization.name).toBe(
      'Globex Inc',
    );
    const cleared = await mine.call('PATCH', `/api/contacts/${free.uuid}`, { organization_id: null });
    expect(cleared.body.data.organization).toBeNull();
    const updates = await events(mine.account, ['contact.updated']);
    expect(updates.map((e) => e.data.object.organization)).toEqual([globex, null]);
  });
});

describe('organization on contacts of the account file', () => {
  it("apply makes a contact with its domain's organization, and a later apply keeps the one it has", async () => {
    const { account, call, organization } = await setUp();
    const acme = await organization('Acme', ['acme.example']);
    const globex = await organization('Globex', ['globex.example']);
    const file = (firstName: string) => ({
      slug: account.slug,
      name: `Test ${account.slug}`,
      plan: 'pro',
      rate_limit_per_minute: 1_000_000,
      contacts: [{ email: 'ann@acme.example', first_name: firstName }],
    });
    await applyAccountFile(file('Ann'));
    const [made] = (await call('GET', '/api/contacts?email=ann%40acme.example')).body.data;
    expect(made.organization).toEqual(acme);
    expect((await call('PATCH', `/api/contacts/${made.uuid}`, { organization_id: globex.id })).status).toBe(
      200,
    );
    // The file names no organization: renaming the contact in it leaves the one the API gave it.
    await applyAccountFile(file('Anna'));
    const after = (await call('GET', `/api/contacts/${made.uuid}`)).body.data;
    expect(after).toMatchObject({ first_name: 'Anna', organization: globex });
  });
});

describe("an organization's deletion", () => {
  const clock = useManualClock({ lazy: true });

  /** An organization with `count` tickets and 3 contacts, and one ticket and contact of another organization. */
  async function deleted(count: number) {
    const s = await setUp();
    const acme = await s.organization('Acme', ['acme.example']);
    const other = await s.organization('Other', ['other.example']);
    const made: string[] = [];
    for (let i = 0; i < count; i++)
      made.push((await tickets.create(s.key, { requester_email: `p${i}@acme.example` })).uuid);
    const people = [];
    for (let i = 0; i < 3; i++) people.push((await s.contact(`c${i}@acme.example`)).uuid);
    const kept = await tickets.create(s.key, { requester_email: 'x@other.example' });
    const keptContact = await s.contact('x@other.example');
    const answer = await s.call('DELETE', `/api/organizations/${acme.id}`);
    expect(answer.status, answer.text).toBe(200);
    return { ...s, acme, other, made, people, kept, keptContact };
  }

  /** Each ticket and contact of the organization cleared, each once, with its event; the others untouched. */
  async function expectCleared(d: Awaited<ReturnType<typeof deleted>>) {
    expect((await tickets.list(d.key, `organization_id=${d.acme.id}`)).total).toBe(0);
    expect((await tickets.list(d.key, `organization_id=${d.other.id}`)).uuids).toEqual([d.kept.uuid]);
    const updated = await events(d.account, ['ticket.updated']);
    expect(updated.map((e) => e.data.object.uuid).sort()).toEqual([...d.made].sort());
    for (const e of updated) {
      expect(e.data.object.organization).toBeNull();
      expect(e.data.previous?.organization).toEqual(d.acme);
    }
    const contacts = await events(d.account, ['contact.updated']);
    expect(contacts.map((e) => e.data.object.uuid).sort()).toEqual([...d.people].sort());
    for (const uuid of d.people) {
      expect((await d.call('GET', `/api/contacts/${uuid}`)).body.data.organization).toBeNull();
    }
    expect((await d.call('GET', `/api/contacts/${d.keptContact.uuid}`)).body.data.organization).toEqual(
      d.other,
    );
  }

  it('answers 200 at once; the runner clears its tickets and contacts within 60 s, each with its event', async () => {
    const d = await deleted(CLEARING_STEP + 5);
    // At once: the organization reads as none, though the runner has not been yet.
    expect((await tickets.current(d.key, d.made[0] ?? '')).ticket.organization).toBeNull();
    let stopped = false;
    const run = runClearings(Number.POSITIVE_INFINITY, { stopped: () => stopped });
    try {
      await clock().advanceUntil(
        async () => (await tickets.list(d.key, `organization_id=${d.acme.id}`)).total === 0,
        { within: 60_000, label: "the organization's tickets cleared" },
      );
      await expectCleared(d);
      // Closed once nothing can still be committed with the organization read before its deletion.
      await clock().advanceUntil(
        async () => (await getClearing(d.account.accountId, d.acme.id)) === undefined,
        {
          within: 60_000,
          label: 'the clearing closed',
        },
      );
    } finally {
      stopped = true;
      await clock().advance(1_000);
      await run;
    }
  });

  it('the deployed function runs the same passes (with the table actions it is granted)', async () => {
    const d = await deleted(3);
    // A second of running: its first pass clears them; the clearing stays open (too recent to close).
    const context = {
      getRemainingTimeInMillis: () => 31_000,
      awsRequestId: 'clearing',
      functionName: 'clearing',
    };
    await clearingFunction({}, context as never);
    await expectCleared(d);
    expect(await getClearing(d.account.accountId, d.acme.id)).toBeDefined();
  });

  it('a crash midway (the answer of a commit lost) is resumed: every ticket and contact cleared once', async () => {
    const d = await deleted(CLEARING_STEP + 5);
    clock();
    const crashed = await withFault(
      { operation: 'TransactWriteItems', after: 'TransactWriteItems', mode: 'lost-answer' },
      () => clearingPass(),
    );
    expect(crashed.result.failed).toBe(1);
    expect((await tickets.list(d.key, `organization_id=${d.acme.id}`)).total).toBeGreaterThan(0);
    // Postponed by the failure: due again a few seconds on, and served then.
    await clock().advance(10_000);
    await clearingPass();
    await expectCleared(d);
  });
});
