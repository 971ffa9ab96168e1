import { describe, expect, it } from 'vitest';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { findContactsByEmail } from '#lib/data/contacts/contacts.ts';
import { organizationsAfter } from '#lib/data/organizations/organizations.ts';
import { scanAll, tableName } from '#lib/data/store/client.ts';
import { writePeople } from '#lib/imports/people.ts';
import type { ImportRecord } from '#lib/imports/records.ts';
import type { ImportContext } from '#lib/imports/writing.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The people writer of imports (issue 42): agents, teams (with memberships), organizations (with domains) and
 * contacts created, then unchanged, then updated when the source changed, never duplicated (also when two runs race
 * on one page); an agent matched by e-mail; a free-mail domain dropped with an error row; validate writes nothing.
 */
const gateway = useGateway();

const page = (
  over: { agentName?: string; orgDomains?: string[]; contactPhone?: string; bobTeams?: string[] } = {},
): ImportRecord[] => [
  {
    type: 'agents',
    agent: {
      sourceId: '11',
      email: 'ann@acme.example',
      name: over.agentName ?? 'Ann',
      active: true,
      teamSourceIds: ['g1'],
    },
  },
  {
    type: 'agents',
    agent: {
      sourceId: '12',
      email: 'bob@acme.example',
      name: 'Bob',
      active: false,
      teamSourceIds: over.bobTeams ?? ['g1', 'g2'],
    },
  },
  { type: 'teams', team: { sourceId: 'g1', name: 'Billing' } },
  { type: 'teams', team: { sourceId: 'g2', name: 'Support' } },
  {
    type: 'organizations',
    organization: { sourceId: 'o1', name: 'Acme', domains: over.orgDomains ?? ['Acme.Example', 'gmail.com'] },
  },
  {
    type: 'contacts',
    contact: {
      sourceId: 'c1',
      email: 'jane@acme.example',
      name: 'Jane Q Doe',
      phone: over.contactPhone ?? null,
      organizationSourceId: 'o1',
    },
  },
];

const ctxOf = (accountId: string, importId: string, validate = false): ImportContext => ({
  accountId,
  importId,
  source: 'zendesk',
  validate,
});

const tally = (o: Partial<Record<'source' | 'created' | 'updated' | 'unchanged' | 'failed', number>>) => ({
  source: 0,
  created: 0,
  updated: 0,
  unchanged: 0,
  failed: 0,
  ...o,
});

async function people(accountId: string) {
  const config = await loadAccountConfig(accountId);
  return {
    agents: config?.agents ?? [],
    teams: config?.teams ?? [],
    orgs: await organizationsAfter(accountId, 0, 100),
    contacts: await findContactsByEmail(accountId, ['jane@acme.example']),
  };
}

describe('import: writing people', () => {
  it('creates each type once, then unchanged, then updated when the source changed; never duplicates', async () => {
    const account = await createTestAccount();
    const acc = account.accountId;
    const first = await writePeople(ctxOf(acc, 'imp_1'), page());
    expect(first.counts).toEqual({
      agents: tally({ source: 2, created: 2 }),
      teams: tally({ source: 2, created: 2 }),
      organizations: tally({ source: 1, created: 1 }),
      contacts: tally({ source: 1, created: 1 }),
    });
    expect(first.errors).toEqual([
      { type: 'organizations', sourceId: 'o1', reason: expect.stringContaining('gmail.com is a free-mail') },
    ]);
    const made = await people(acc);
    const ann = made.agents.find((a) => a.email === 'ann@acme.example');
    const bob = made.agents.find((a) => a.email === 'bob@acme.example');
    const billing = made.teams.find((t) => t.name === 'Billing');
    const support = made.teams.find((t) => t.name === 'Support');
    expect(ann).toMatchObject({
      active: true,
      importedFrom: { source: 'zendesk', id: '11', importId: 'imp_1' },
    });
    expect(bob?.active).toBe(false);
    expect(ann?.teamIds).toEqual([billing?.id]);
    expect(bob?.teamIds).toEqual([billing?.id, support?.id].sort((a, b) => (a ?? 0) - (b ?? 0)));
    expect(made.orgs).toEqual([
      expect.objectContaining({
        name: 'Acme',
        domains: ['acme.example'],
        importedFrom: expect.objectContaining({ id: 'o1' }),
      }),
    ]);
    expect(made.contacts).toEqual([
      expect.objectContaining({
        firstName: 'Jane',
        lastName: 'Q Doe',
        organization: { id: made.orgs[0]?.id, name: 'Acme' },
        importedFrom: { source: 'zendesk', id: 'c1', importId: 'imp_1' },
      }),
    ]);

    const table = async () => JSON.stringify(await scanAll({ TableName: tableName() }));
    const unchangedFrom = await table();
    const again = await writePeople(ctxOf(acc, 'imp_2'), page());
    expect(await table(), 'an unchanged run writes nothing').toBe(unchangedFrom);
    expect(again.counts).toEqual({
      agents: tally({ source: 2, unchanged: 2 }),
      teams: tally({ source: 2, unchanged: 2 }),
      organizations: tally({ source: 1, unchanged: 1 }),
      contacts: tally({ source: 1, unchanged: 1 }),
    });
    expect(await people(acc)).toEqual(made);

    const changed = await writePeople(
      ctxOf(acc, 'imp_3'),
      page({
        agentName: 'Ann Lee',
        orgDomains: ['acme.example', 'acme.test'],
        contactPhone: '+1 555 0100',
        bobTeams: ['g1'],
      }),
    );
    expect(changed.counts).toEqual({
      agents: tally({ source: 2, updated: 2 }),
      teams: tally({ source: 2, unchanged: 2 }),
      organizations: tally({ source: 1, updated: 1 }),
      contacts: tally({ source: 1, updated: 1 }),
    });
    expect(changed.errors).toEqual([]);
    const after = await people(acc);
    expect(after.agents).toHaveLength(made.agents.length);
    expect(after.agents.find((a) => a.id === ann?.id)?.name).toBe('Ann Lee');
    // Bob left Support at the source: he leaves it here.
    expect(after.agents.find((a) => a.id === bob?.id)?.teamIds).toEqual([billing?.id]);
    expect(after.orgs.map((o) => o.domains)).toEqual([['acme.example', 'acme.test']]);
    expect(after.contacts.map((c) => [c.id, c.phone])).toEqual([[made.contacts[0]?.id, '+1 555 0100']]);
    // Changed at the source in nothing kept here (one more free-mail domain): unchanged, the key moved.
    const same = {
      agentName: 'Ann Lee',
      contactPhone: '+1 555 0100',
      bobTeams: ['g1'],
      orgDomains: ['acme.example', 'acme.test', 'yahoo.com'],
    };
    const nothing = await writePeople(ctxOf(acc, 'imp_4'), page(same));
    expect(nothing.counts.organizations).toEqual(tally({ source: 1, unchanged: 1 }));
    expect(nothing.errors.map((e) => e.reason)).toEqual([expect.stringContaining('yahoo.com')]);
    expect((await organizationsAfter(acc, 0, 100)).map((o) => o.updatedAt)).toEqual(
      after.orgs.map((o) => o.updatedAt),
    );
    // Each answer shows where it came from (null on what the import did not make).
    const shown = async (path: string) =>
      (await gateway.call('GET', path, { key: account.apiKey })).body.data;
    const from = (id: string) => ({ source: 'zendesk', id, import_id: 'imp_1' });
    expect((await shown(`/api/agents/${ann?.id}`)).imported_from).toEqual(from('11'));
    expect((await shown(`/api/teams/${billing?.id}`)).imported_from).toEqual(from('g1'));
    expect((await shown(`/api/organizations/${made.orgs[0]?.id}`)).imported_from).toEqual(from('o1'));
    expect((await shown(`/api/contacts/${made.contacts[0]?.uuid}`)).imported_from).toEqual(from('c1'));
    // Each imported change's event carries the import's id, at the event's top level (spec: "Imports").
    const events = (await readFeedToEnd(gateway.call, account.apiKey)).events;
    const imported = events.filter((e) => /^(agent|team|organization|contact)\./.test(e.type));
    expect(imported.length).toBeGreaterThanOrEqual(7);
    for (const e of imported) {
      expect((e as { import_id?: string }).import_id).toMatch(/^imp_[13]$/);
      expect(e.data).not.toHaveProperty('import_id');
    }
  });

  it('counts a page written again after a crash as its first attempt did, each type', async () => {
    const account = await createTestAccount();
    const acc = account.accountId;
    const at = (n: number) => ({ ...ctxOf(acc, 'imp_1'), mark: `imp_1:${n}` });
    const first = await writePeople(at(0), page());
    // The runner died before the job's save: the page is written again, and counts as it did.
    expect((await writePeople(at(0), page())).counts).toEqual(first.counts);
    const later = await writePeople(at(1), page());
    expect(later.counts.contacts).toEqual(tally({ source: 1, unchanged: 1 }));
    expect(later.counts.teams).toEqual(tally({ source: 2, unchanged: 2 }));
  });

  it("matches an agent to the account's agent by e-mail, case-insensitively", async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const acc = account.accountId;
    const before = (await loadAccountConfig(acc))?.agents ?? [];
    const written = await writePeople(ctxOf(acc, 'imp_m'), [
      {
        type: 'agents',
        agent: {
          sourceId: '7',
          email: 'AGENT1@Desk.Test',
          name: 'Someone',
          active: false,
          teamSourceIds: [],
        },
      },
    ]);
    // Matched, and nothing of it changed: unchanged (its key now names it).
    expect(written.counts.agents).toEqual(tally({ source: 1, unchanged: 1 }));
    const agents = (await loadAccountConfig(acc))?.agents ?? [];
    expect(agents).toHaveLength(before.length);
    // Matched, not made: it keeps its name and state, and no imported_from (an undo leaves it).
    expect(agents[0]).toMatchObject({ email: 'agent1@desk.test', name: 'Agent 1', active: true });
    expect(agents[0]?.importedFrom).toBeUndefined();
    const again = await writePeople(ctxOf(acc, 'imp_n'), [
      {
        type: 'agents',
        agent: {
          sourceId: '7',
          email: 'AGENT1@Desk.Test',
          name: 'Someone',
          active: false,
          teamSourceIds: [],
        },
      },
    ]);
    expect(again.counts.agents).toEqual(tally({ source: 1, unchanged: 1 }));
  });

  it('a team takes in more pending members than one commit holds', async () => {
    const acc = (await createTestAccount()).accountId;
    const agents: ImportRecord[] = Array.from({ length: 25 }, (_, i) => ({
      type: 'agents',
      agent: {
        sourceId: `a${i}`,
        email: `a${i}@acme.example`,
        name: `A ${i}`,
        active: true,
        teamSourceIds: ['g9'],
      },
    }));
    const written = await writePeople(ctxOf(acc, 'imp_t'), [
      ...agents,
      { type: 'teams', team: { sourceId: 'g9', name: 'Everyone' } },
    ]);
    expect(written.counts.teams).toEqual(tally({ source: 1, created: 1 }));
    const config = await loadAccountConfig(acc);
    const team = config?.teams.find((t) => t.name === 'Everyone');
    expect(config?.agents.filter((a) => team && a.teamIds.includes(team.id))).toHaveLength(25);
  });

  it('two runs racing on one page create each object once', async () => {
    const acc = (await createTestAccount()).accountId;
    const [a, b] = await Promise.all([
      writePeople(ctxOf(acc, 'imp_a'), page()),
      writePeople(ctxOf(acc, 'imp_b'), page()),
    ]);
    for (const type of ['agents', 'teams', 'organizations', 'contacts'] as const) {
      const ca = a.counts[type];
      const cb = b.counts[type];
      expect((ca?.failed ?? 0) + (cb?.failed ?? 0), type).toBe(0);
      expect((ca?.created ?? 0) + (cb?.created ?? 0), type).toBe(ca?.source);
    }
    const made = await people(acc);
    expect(made.agents).toHaveLength(2);
    expect(made.teams).toHaveLength(2);
    expect(made.orgs).toHaveLength(1);
    expect(made.contacts).toHaveLength(1);
  });

  it('validate decides every outcome and error row and writes nothing but its marks of what it would create', async () => {
    const acc = (await createTestAccount({ agents: agentsFile(1) })).accountId;
    const records: ImportRecord[] = [
      ...page(),
      {
        type: 'contacts',
        contact: {
          sourceId: 'c2',
          email: 'not an address',
          name: null,
          phone: null,
          organizationSourceId: null,
        },
      },
    ];
    const isMark = (item: Record<string, unknown>) => String(item.sk).startsWith('VALIDATED#');
    const items = () => scanAll({ TableName: tableName() });
    const table = async () => JSON.stringify((await items()).filter((item) => !isMark(item)));
    const before = await table();
    const validated = await writePeople(ctxOf(acc, 'imp_v', true), records);
    expect(await table()).toBe(before);
    // One mark a person it would create (not the contact it fails), expiring by the table's TTL.
    const marks = (await items()).filter(isMark);
    expect(marks).toHaveLength(6);
    for (const mark of marks)
      expect(mark).toMatchObject({
        sk: 'VALIDATED#imp_v',
        type: 'import_would_create',
        expires_at: expect.any(Number),
      });
    expect(validated.counts).toEqual({
      agents: tally({ source: 2, created: 2 }),
      teams: tally({ source: 2, created: 2 }),
      organizations: tally({ source: 1, created: 1 }),
      contacts: tally({ source: 2, created: 1, failed: 1 }),
    });
    expect(validated.errors.map((e) => [e.type, e.sourceId])).toEqual([
      ['organizations', 'o1'],
      ['contacts', 'c2'],
    ]);
    // The run then makes what validate said.
    const run = await writePeople(ctxOf(acc, 'imp_r'), records);
    expect(run.counts).toEqual(validated.counts);
  });
});
