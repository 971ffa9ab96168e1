import { describe, expect, it } from 'vitest';
import { createKey } from '#lib/accounts/key-making.ts';
import { eventShardOfObject } from '#lib/data/events.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { type ItemWrite, measureItemWrites } from '#test/support/item-sizes.ts';

/**
 * Organizations over the local gateway (decisions.md, "People: agents, teams and organizations"): the five routes,
 * the cursor list and its `domain` filter, a name and each domain one organization's (case and IDN forms, a race),
 * free-mail domains refused, If-Match, Idempotency-Key, the events, the scopes and accounts kept apart.
 */
const gateway = useGateway();

const caller = (account: TestAccount, key = account.apiKey) => keyedCaller(gateway, key);

async function setUp() {
  const account = await createTestAccount();
  const call = caller(account);
  const create = async (body: Record<string, unknown>) => {
    const answer = await call('POST', '/api/organizations', body);
    expect(answer.status, answer.text).toBe(201);
    return answer.body.data as { id: number; name: string; domains: string[]; updated_at: string };
  };
  const organizationEvents = async () =>
    (await readFeedToEnd(gateway.call, account.apiKey, { types: ['organization.*'] })).events;
  return { account, call, create, organizationEvents };
}

describe('organizations', () => {
  it('round trip: create, get, list, update, delete; each answer as documented, ETags on GET and PATCH', async () => {
    const { call } = await setUp();
    const created = await call('POST', '/api/organizations', {
      name: '  Acme Corp ',
      domains: ['Acme.Example', 'acme.example', 'Bücher.example'],
      external_id: 'crm-1042',
    });
    expect(created.status).toBe(201);
    const org = created.body.data;
    expect(org).toEqual({
      id: expect.any(Number),
      name: 'Acme Corp',
      domains: ['acme.example', 'xn--bcher-kva.example'],
      external_id: 'crm-1042',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      updated_at: org.created_at,
      imported_from: null,
    });

    const got = await call('GET', `/api/organizations/${org.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ data: org });
    expect(got.headers.get('etag')).toBe('"1"');

    const listed = await call('GET', '/api/organizations');
    expect(listed.body).toEqual({ data: [org], next_cursor: null });

    const patched = await call('PATCH', `/api/organizations/${org.id}`, {
      name: 'Acme Corporation',
      domains: ['acme.example', 'acme.test'],
      external_id: null,
    });
    expect(patched.status).toBe(200);
    expect(patched.headers.get('etag')).toBe('"2"');
    expect(patched.body.data).toMatchObject({
      id: org.id,
      name: 'Acme Corporation',
      domains: ['acme.example', 'acme.test'],
      external_id: null,
    });
    expect(patched.body.data.updated_at > org.updated_at).toBe(true);

    // A domain dropped is free at once; one kept answers the organization as it is now.
    expect((await call('GET', '/api/organizations?domain=acme.example')).body.data).toEqual([
      patched.body.data,
    ]);
    expect((await call('GET', '/api/organizations?domain=bücher.example')).body.data).toEqual([]);

    const removed = await call('DELETE', `/api/organizations/${org.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ data: patched.body.data });
    expect((await call('GET', `/api/organizations/${org.id}`)).status).toBe(404);
    expect((await call('PATCH', `/api/organizations/${org.id}`, { name: 'X' })).status).toBe(404);
    expect((await call('DELETE', `/api/organizations/${org.id}`)).status).toBe(404);
    expect((await call('GET', '/api/organizations')).body).toEqual({ data: [], next_cursor: null });
  });

  it('deleting frees the name and the domains; the id is never given again', async () => {
    const { call, create } = await setUp();
    const first = await create({ name: 'Globex', domains: ['globex.example'] });
    expect((await call('DELETE', `/api/organizations/${first.id}`)).status).toBe(200);
    const again = await create({ name: 'GLOBEX', domains: ['Globex.example'] });
    expect(again.id).toBeGreaterThan(first.id);
    expect((await call('GET', '/api/organizations?domain=globex.example')).body.data).toEqual([again]);
  });

  it('pages by id with a cursor, and filters by domain with one lookup', async () => {
    const { call, create } = await setUp();
    const made = [];
    for (let i = 1; i <= 5; i++) made.push(await create({ name: `Org ${i}`, domains: [`org${i}.example`] }));
    const ids = made.map((o) => o.id);

    const seen: number[] = [];
    let after: string | null = '';
    const cursors: (string | null)[] = [];
    while (after !== null) {
      const page = await call('GET', `/api/organizations?limit=2${after ? `&after=${after}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((o: { id: number }) => o.id));
      after = page.body.next_cursor;
      cursors.push(after);
    }
    expect(seen).toEqual(ids);
    expect(cursors).toEqual([String(ids[1]), String(ids[3]), null]);
    // A cursor past the last one, and one of a deleted organization, still page on by id.
    expect((await call('GET', `/api/organizations?after=${ids[4]}`)).body).toEqual({
      data: [],
      next_cursor: null,
    });
    expect((await call('DELETE', `/api/organizations/${ids[1]}`)).status).toBe(200);
    const afterDeleted = await call('GET', `/api/organizations?after=${ids[1]}&limit=1`);
    expect(afterDeleted.body).toEqual({ data: [made[2]], next_cursor: String(ids[2]) });

    const byDomain = await call('GET', '/api/organizations?domain=ORG3.example');
    expect(byDomain.body).toEqual({ data: [made[2]], next_cursor: null });
    expect((await call('GET', `/api/organizations?domain=org3.example&after=${ids[2]}`)).body.data).toEqual(
      [],
    );
    expect((await call('GET', '/api/organizations?domain=nobody.example')).body).toEqual({
      data: [],
      next_cursor: null,
    });

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['after=abc', 'after'],
      ['domain=not a domain', 'domain'],
      ['domain=https://acme.example', 'domain'],
    ]) {
      const bad = await call('GET', `/api/organizations?${encodeURI(query as string)}`);
      expect(bad.status, query).toBe(422);
      expect(Object.keys(bad.body.errors), query).toEqual([field]);
    }
  });

  it('a name and each domain belong to one organization: case-insensitive, IDN forms alike', async () => {
    const { call, create } = await setUp();
    const acme = await create({ name: 'Acme', domains: ['acme.example', 'Bücher.example'] });
    const other = await create({ name: 'Other', domains: ['other.example'] });

    const refusals: [Record<string, unknown>, Record<string, string[]>][] = [
      [{ name: 'ACME' }, { name: ['The name has already been taken.'] }],
      [
        { name: 'New', domains: ['ACME.example'] },
        { domains: ['The domain acme.example has already been taken.'] },
      ],
      [
        { name: 'New', domains: ['xn--bcher-kva.example'] },
        { domains: ['The domain xn--bcher-kva.example has already been taken.'] },
      ],
      [
        { name: 'acme', domains: ['new.example', 'BÜCHER.example'] },
        {
          name: ['The name has already been taken.'],
          domains: ['The domain xn--bcher-kva.example has already been taken.'],
        },
      ],
    ];
    for (const [body, errors] of refusals) {
      const refused = await call('POST', '/api/organizations', body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body.errors).toEqual(errors);
    }
    // A PATCH meets the same claims: another's name or domain is refused, its own (in any case) is not.
    const taken = await call('PATCH', `/api/organizations/${other.id}`, {
      name: 'acme',
      domains: ['other.example', 'acme.example'],
    });
    expect(taken.status).toBe(422);
    expect(taken.body.errors).toEqual({
      name: ['The name has already been taken.'],
      domains: ['The domain acme.example has already been taken.'],
    });
    const recased = await call('PATCH', `/api/organizations/${acme.id}`, { name: 'ACME' });
    expect(recased.status).toBe(200);
    // Nothing of the refused writes: the two organizations as they were (but the recasing), no other.
    const listed = await call('GET', '/api/organizations');
    expect(listed.body.data.map((o: { name: string }) => o.name)).toEqual(['ACME', 'Other']);
    expect((await call('GET', '/api/organizations?domain=new.example')).body.data).toEqual([]);
  });

  it('ten creates racing for one domain: exactly one gets it', async () => {
    const { call } = await setUp();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call('POST', '/api/organizations', { name: `Racer ${i}`, domains: ['contested.example'] }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, ...Array(9).fill(422)]);
    for (const refused of answers.filter((a) => a.status === 422)) {
      expect(refused.body.errors).toEqual({
        domains: ['The domain contested.example has already been taken.'],
      });
    }
    const winner = answers.find((a) => a.status === 201)?.body.data;
    expect((await call('GET', '/api/organizations')).body.data).toEqual([winner]);
    expect((await call('GET', '/api/organizations?domain=contested.example')).body.data).toEqual([winner]);
  });

  it('bad input: a clear 422, nothing written', async () => {
    const { call, organizationEvents } = await setUp();
    const cases: [unknown, string[]][] = [
      [{}, ['name']],
      [{ name: 'x'.repeat(256) }, ['name']],
      [{ name: 'A', domains: 'acme.example' }, ['domains']],
      [{ name: 'A', domains: ['acme.example', 'not a domain'] }, ['domains.1']],
      [{ name: 'A', domains: ['acme'] }, ['domains.0']],
      [{ name: 'A', domains: ['user@acme.example'] }, ['domains.0']],
      [{ name: 'A', domains: [42] }, ['domains.0']],
      [{ name: 'A', domains: Array.from({ length: 21 }, (_, i) => `d${i}.example`) }, ['domains']],
      [{ name: 'A', external_id: 7 }, ['external_id']],
    ];
    for (const [body, fields] of cases) {
      const refused = await call('POST', '/api/organizations', body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(refused.body.errors), JSON.stringify(body)).toEqual(fields);
      expect(refused.body.message).toEqual(expect.any(String));
    }
    expect((await call('GET', '/api/organizations')).body.data).toEqual([]);
    expect(await organizationEvents()).toEqual([]);
  });

  it('free-mail and disposable domains are refused on `domains`', async () => {
    const { call, create } = await setUp();
    const refused = await call('POST', '/api/organizations', {
      name: 'Webmail',
      domains: ['acme.example', 'Gmail.com', 'outlook.com', 'mailinator.com'],
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual({
      domains: ['gmail.com', 'outlook.com', 'mailinator.com'].map(
        (d) => `The domain ${d} is a free-mail or disposable e-mail domain: no organization may claim it.`,
      ),
    });
    const org = await create({ name: 'Acme', domains: ['acme.example'] });
    const patched = await call('PATCH', `/api/organizations/${org.id}`, { domains: ['yopmail.com'] });
    expect(patched.status).toBe(422);
    expect(Object.keys(patched.body.errors)).toEqual(['domains']);
    expect((await call('GET', `/api/organizations/${org.id}`)).body.data).toEqual(org);
  });

  it('If-Match: a stale ETag is a 412 on PATCH and DELETE, and changes nothing', async () => {
    const { call, create } = await setUp();
    const org = await create({ name: 'Initech', domains: ['initech.example'] });
    const first = await call(
      'PATCH',
      `/api/organizations/${org.id}`,
      { name: 'Initech 2' },
      { 'If-Match': '"1"' },
    );
    expect(first.status).toBe(200);
    const message = 'The organization has changed since you read it (If-Match does not match its ETag).';
    const stale = await call(
      'PATCH',
      `/api/organizations/${org.id}`,
      { name: 'Initech 3' },
      { 'If-Match': '"1"' },
    );
    expect(stale.status).toBe(412);
    expect(stale.body).toEqual({ message });
    const staleDelete = await call('DELETE', `/api/organizations/${org.id}`, undefined, {
      'If-Match': '"1"',
    });
    expect(staleDelete.status).toBe(412);
    const now = await call('GET', `/api/organizations/${org.id}`);
    expect(now.body.data.name).toBe('Initech 2');
    expect(now.headers.get('etag')).toBe('"2"');
    const removed = await call('DELETE', `/api/organizations/${org.id}`, undefined, { 'If-Match': '"2"' });
    expect(removed.status).toBe(200);
  });

  it('Idempotency-Key: a retry answers the kept answer and writes nothing more', async () => {
    const { call, organizationEvents } = await setUp();
    const body = { name: 'Umbrella', domains: ['umbrella.example'] };
    const key = { 'Idempotency-Key': 'org-create-1' };
    const first = await call('POST', '/api/organizations', body, key);
    expect(first.status).toBe(201);
    const replay = await call('POST', '/api/organizations', body, key);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(first.text);
    const other = await call('POST', '/api/organizations', { ...body, name: 'Other' }, key);
    expect(other.status).toBe(422);
    expect(Object.keys(other.body.errors)).toEqual(['idempotency_key']);

    const id = first.body.data.id;
    const patchKey = { 'Idempotency-Key': 'org-patch-1' };
    const patched = await call('PATCH', `/api/organizations/${id}`, { name: 'Umbrella Corp' }, patchKey);
    const patchedAgain = await call('PATCH', `/api/organizations/${id}`, { name: 'Umbrella Corp' }, patchKey);
    expect(patchedAgain.text).toBe(patched.text);
    expect(patchedAgain.headers.get('etag')).toBe('"2"');
    const deleteKey = { 'Idempotency-Key': 'org-delete-1' };
    const removed = await call('DELETE', `/api/organizations/${id}`, undefined, deleteKey);
    const removedAgain = await call('DELETE', `/api/organizations/${id}`, undefined, deleteKey);
    expect([removed.status, removedAgain.status]).toEqual([200, 200]);
    expect(removedAgain.text).toBe(removed.text);
    expect(removedAgain.headers.get('idempotent-replayed')).toBe('true');

    expect((await organizationEvents()).map((e) => e.type)).toEqual([
      'organization.created',
      'organization.updated',
      'organization.deleted',
    ]);
  });

  it('events: created, updated with what changed, deleted with the organization as it was; none for a PATCH that changes nothing', async () => {
    const { call, create, organizationEvents } = await setUp();
    const org = await create({ name: 'Hooli', domains: ['hooli.example'] });
    const patched = await call('PATCH', `/api/organizations/${org.id}`, { name: 'Hooli XYZ' });
    const unchanged = await call('PATCH', `/api/organizations/${org.id}`, { name: 'Hooli XYZ' });
    expect(unchanged.status).toBe(200);
    expect(unchanged.headers.get('etag')).toBe('"2"');
    expect((await call('DELETE', `/api/organizations/${org.id}`)).status).toBe(200);

    const events = await organizationEvents();
    expect(events.map((e) => [e.type, e.data.version])).toEqual([
      ['organization.created', 1],
      ['organization.updated', 2],
      ['organization.deleted', 3],
    ]);
    expect(events[0]?.data.object).toEqual(org);
    expect(events[1]?.data).toMatchObject({
      object: patched.body.data,
      previous: { name: 'Hooli', updated_at: org.updated_at },
    });
    expect(events[2]?.data.object).toEqual(patched.body.data);
    // All in one feed shard, the one its id names, so the feed keeps them in commit order whatever they hold.
    expect(new Set(events.map((e) => eventShardOfObject(e.data.object, e.type))).size).toBe(1);
    const renamed = (i: number) => eventShardOfObject({ ...org, name: `Hooli ${i}` }, 'organization.updated');
    expect(new Set(Array.from({ length: 16 }, (_, i) => renamed(i)))).toEqual(new Set([renamed(0)]));
    // Webhook endpoints may subscribe to them as to every event type.
    const hook = await call('POST', '/api/webhooks', {
      url: 'http://127.0.0.1:4599/hooks',
      events: ['organization.*', 'organization.deleted'],
    });
    expect(hook.status, hook.text).toBe(201);
  });

  it('scopes: organizations:read to read, organizations:write to write', async () => {
    const { account, create } = await setUp();
    const org = await create({ name: 'Scoped', domains: ['scoped.example'] });
    const withScopes = async (scopes: string[]) =>
      caller(
        account,
        (await createKey(account.accountId, { name: scopes.join(' '), scopes: scopes as never })).api_key,
      );

    const ticketsOnly = await withScopes(['tickets:read']);
    for (const path of ['/api/organizations', `/api/organizations/${org.id}`]) {
      const refused = await ticketsOnly('GET', path);
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ message: 'This key lacks the scope organizations:read.' });
    }
    const reader = await withScopes(['organizations:read']);
    expect((await reader('GET', `/api/organizations/${org.id}`)).status).toBe(200);
    const writeRefused = await reader('POST', '/api/organizations', { name: 'Nope' });
    expect(writeRefused.status).toBe(403);
    expect(writeRefused.body).toEqual({ message: 'This key lacks the scope organizations:write.' });
    expect((await reader('DELETE', `/api/organizations/${org.id}`)).status).toBe(403);
    const writer = await withScopes(['organizations:write']);
    expect((await writer('GET', '/api/organizations')).status).toBe(200);
    expect((await writer('PATCH', `/api/organizations/${org.id}`, { name: 'Scoped 2' })).status).toBe(200);
  });

  it("another account's organization is a 404, as an unknown or malformed id is; claims are each account's own", async () => {
    const mine = await setUp();
    const theirs = await setUp();
    const their = await theirs.create({ name: 'Shared Name', domains: ['shared.example'] });
    // Ids are the account's own sequence: this account has none yet, so theirs names nothing here.
    const path = `/api/organizations/${their.id}`;
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'Mine now' }],
      ['PATCH', { name: '' }],
      ['DELETE', undefined],
    ] as const) {
      const answer = await mine.call(method, path, body);
      expect(answer.status, `${method} ${JSON.stringify(body)}`).toBe(404);
      expect(answer.body).toEqual({ message: 'Not found.' });
    }
    for (const target of ['/api/organizations/0', '/api/organizations/abc', '/api/organizations/1e3']) {
      expect((await mine.call('GET', target)).status, target).toBe(404);
    }
    expect((await theirs.call('GET', path)).body.data).toEqual(their);
    // The same name and domain in this account: each account's claims are its own.
    const own = await mine.create({ name: 'Shared Name', domains: ['shared.example'] });
    expect((await mine.call('GET', '/api/organizations?domain=shared.example')).body.data).toEqual([own]);
    expect((await theirs.call('GET', '/api/organizations?domain=shared.example')).body.data).toEqual([their]);
  });

  it('writes what docs/capacity.md counts: the organization, its claims and its event in one transaction', async () => {
    const { account, call, create } = await setUp();
    await create({ name: 'Warm-up', domains: ['warm.example'] });
    let id = 0;
    const measure = async (work: () => Promise<unknown>) => {
      const writes = await measureItemWrites(work, [account.accountId]);
      const inCommit = writes.filter((w) => w.transactional);
      return {
        commit: inCommit
          .map((w) =>
            `${w.operation} ${w.shape}`
              .replace(/#\d{10}$/, '#<id>')
              .replace(/NAME#[0-9a-f]{64}$/, 'NAME#<hash>')
              .replace(/EVENTS#<acc>#\d+ \/ \d+$/, 'EVENTS#<acc>#<shard> / <place>'),
          )
          .sort(),
        units: (ws: ItemWrite[]) => ws.reduce((n, w) => n + w.writeUnits, 0),
        writes,
        inCommit,
      };
    };
    const created = await measure(async () => {
      id = (await create({ name: 'Measured', domains: ['m1.example', 'm2.example'] })).id;
    });
    expect(created.commit).toEqual([
      'Put EVENTS#<acc>#<shard> / <place>',
      'Put ORGANIZATIONS#<acc> / DOMAIN#m1.example',
      'Put ORGANIZATIONS#<acc> / DOMAIN#m2.example',
      'Put ORGANIZATIONS#<acc> / NAME#<hash>',
      'Put ORGANIZATIONS#<acc> / ORGANIZATION#<id>',
    ]);
    const updated = await measure(() =>
      call('PATCH', `/api/organizations/${id}`, {
        name: 'Measured 2',
        domains: ['m1.example', 'm3.example'],
      }),
    );
    expect(updated.commit).toHaveLength(7);
    const deleted = await measure(() => call('DELETE', `/api/organizations/${id}`));
    // The organization, its name and two domain claims, its event, and its clearing (the runner's due entry).
    expect(deleted.commit).toHaveLength(6);
    const figures = { created, updated, deleted };
    for (const [write, m] of Object.entries(figures)) {
      console.log(
        `${write}: ${m.writes.length} items (${m.inCommit.length} in the commit), ` +
          `${m.units(m.writes)} WU (${m.units(m.inCommit)} in the commit); largest ` +
          `${Math.max(...m.writes.map((w) => Math.max(w.bytesBefore, w.bytesAfter)))} B`,
      );
      for (const w of m.writes) expect(Math.max(w.bytesBefore, w.bytesAfter), w.shape).toBeLessThan(1024);
    }
  });
});
