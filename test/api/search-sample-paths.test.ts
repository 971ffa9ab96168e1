import { afterEach, describe, expect, it } from 'vitest';
import { contacts } from '#lib/data/contacts/contact-index.ts';
import { deals } from '#lib/data/deals/deal-index.ts';
import { keyedTerm } from '#lib/data/index/keyed.ts';
import { sampledTerm } from '#lib/data/index/term-sample.ts';
import { parseTermKey } from '#lib/data/keys.ts';
import { getItem } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { purgeOne } from '#lib/data/trash/purge.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { personNamed } from '#test/support/erasures.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { expectedSample, indexSnapshot, sampleOf } from '#test/support/index-snapshot.ts';
import {
  agePendingItems,
  clearHolds,
  commitOf,
  failNext,
  hold,
  pendingItems,
} from '#test/support/pending-holds.ts';

/**
 * The terms' sample (lib/data/index/term-sample.ts) kept exact by every path that writes terms, for the three
 * engines: deals and contacts (renames, a contact's update, the trash, a restore, a purge, an erasure), tickets
 * whose create fails after its marked puts (the orphan copies: kept by the reindex's sweep while the create may
 * still land, deleted once it surely will not), and a create held before its commit while the reindex runs.
 * The oracle: the sample partition holds exactly the copies entityItems gives the live entities, every copy has its
 * term in its shard, and the reindex changes nothing of a snapshot.
 */
const gateway = useGateway();
afterEach(clearHolds);

type Engine = typeof tickets | typeof deals | typeof contacts;
const ENGINES: [string, Engine][] = [
  ['TICKET', tickets],
  ['DEAL', deals],
  ['CONTACT', contacts],
];

/** Every sample copy has its term in its shard (the same sort key in the shard's partition). */
async function expectTwins(engine: Engine, accountId: string): Promise<void> {
  for (const { sk } of await sampleOf(engine, accountId)) {
    const { term, orderKey } = parseTermKey(sk);
    const twin = engine.index.keys.prefixTerm(accountId, term, orderKey);
    expect(await getItem(twin), `${sk}: its term in its shard`).toBeDefined();
  }
}

/** A word `tag<k>` that the sample takes for an entity of this number (term-sample.ts). */
function sampledWord(number: number, tag: string): string {
  for (let k = 0; ; k++) if (sampledTerm(number, `${tag}${k}`)) return `${tag}${k}`;
}

describe('the terms sample on every write path', () => {
  it('deals and contacts: renames, a contact update, trash, restore, purge and an erasure keep it exact', async () => {
    const stages = [{ name: 'Lead', color: '#000001', probability: 10 }];
    const account = await createTestAccount({ pipelines: [{ name: 'Sales', default: true, stages }] });
    const { accountId } = account;
    const call = keyedCaller(gateway, account.apiKey);
    const person = personNamed('sampled', 'Ottoline', 'Vexbridge', '+44 20 7946 0555');
    const dealUuids: string[] = [];
    const contactUuids: string[] = [];
    for (let n = 1; n <= 8; n++) {
      // A deal's name and its contact's names hold words the sample takes for their numbers (deal n, contact n).
      const made = await call('POST', '/api/deals', {
        name: `${sampledWord(n, 'dq')} ${sampledWord(n, 'dr')} renewal`,
        amount: n,
        contact_email: n === 8 ? person.email : `c${n}@sample-paths.test`,
        contact_first_name: n === 8 ? person.first : sampledWord(n, 'cf'),
        contact_last_name: n === 8 ? person.last : sampledWord(n, 'cl'),
      });
      expect(made.status, made.text).toBe(201);
      dealUuids.push(made.body.data.uuid);
      contactUuids.push(made.body.data.contact.uuid);
    }
    expect((await sampleOf(deals, accountId)).length).toBeGreaterThanOrEqual(16);
    expect((await sampleOf(contacts, accountId)).length).toBeGreaterThan(0);

    // Renames: words in, words out (a sampled one out, another sampled one in).
    for (const [i, uuid] of dealUuids.slice(0, 3).entries()) {
      const r = await call('PATCH', `/api/deals/${uuid}`, { name: `${sampledWord(i + 1, 'dz')} renamed` });
      expect(r.status, r.text).toBe(200);
    }
    for (const [i, uuid] of contactUuids.slice(0, 2).entries()) {
      const r = await call('PATCH', `/api/contacts/${uuid}`, { first_name: sampledWord(i + 1, 'cz') });
      expect(r.status, r.text).toBe(200);
    }
    // The trash: deal 4 deleted and restored, deal 5 deleted and purged, deal 6 and its contact deleted.
    for (const i of [3, 4, 5]) expect((await call('DELETE', `/api/deals/${dealUuids[i]}`)).status).toBe(200);
    const contactGone = await call('DELETE', `/api/contacts/${contactUuids[5]}`);
    expect(contactGone.status, contactGone.text).toBe(200);
    expect((await call('POST', `/api/trash/${dealUuids[3]}/restore`)).status).toBe(200);
    const trashed = await call('GET', '/api/trash');
    const purgeAt = trashed.body.data.find((t: { uuid: string }) => t.uuid === dealUuids[4]).purge_at;
    expect(
      await purgeOne(accountId, dealUuids[4] as string, Date.parse(purgeAt) * 1000 + 1000),
    ).toBeDefined();

    // An erasure of the person whose deal and contact are number 8.
    const started = await call('POST', '/api/erasures', { email: person.email });
    expect(started.status, started.text).toBe(202);
    await runErasure(accountId, started.body.data.id);

    for (const [engine, uuids] of [
      [deals, dealUuids],
      [contacts, contactUuids],
    ] as const) {
      expect((await sampleOf(engine, accountId)).map((s) => s.sk)).toEqual(
        await expectedSample(engine, accountId, uuids),
      );
      await expectTwins(engine, accountId);
    }
    for (const [entity, engine] of ENGINES) {
      const before = await indexSnapshot(entity, accountId);
      await engine.rebuild(accountId);
      expect(await indexSnapshot(entity, accountId), entity).toEqual(before);
    }
  });

  it("tickets: a failed create's orphan copies stay while it may land, and go once it cannot; a held create's stay", async () => {
    const account = await createTestAccount();
    const { accountId } = account;
    const call = keyedCaller(gateway, account.apiKey);
    const body = (n: number, tag: string) => ({
      subject: `${sampledWord(n, 'tq')} ${sampledWord(n, 'tr')} ${tag}`,
      description: 'd',
      requester_email: `r${n}@sample-paths.test`,
      custom_fields: { who: tag },
    });
    const uuids: string[] = [];
    for (let n = 1; n <= 4; n++) {
      const made = await call('POST', '/api/tickets', body(n, `seed-${n}`));
      expect(made.status, made.text).toBe(201);
      expect(made.body.ticket.number ?? n).toBe(n);
      uuids.push(made.body.ticket.uuid);
    }
    // Number 5: its commit fails (throttled): what it marked before it is left, with its pending item.
    failNext('TransactWriteItemsCommand', commitOf('orphan-5'), 'throttle');
    const failed = await call('POST', '/api/tickets', body(5, 'orphan-5'));
    expect(failed.status, failed.text).toBeGreaterThanOrEqual(500);
    // Marks stay on a committed create's items (its pending item gone): the orphans are those of a pending item left.
    const left = new Set((await pendingItems(accountId)).map((p) => String(p.sk)));
    expect(left.size).toBe(1);
    const orphans = (await sampleOf(tickets, accountId)).filter((s) => left.has(String(s.u)));
    expect(orphans.length, 'the failed create left marked copies in the sample').toBeGreaterThan(0);

    // A create held before its commit (number 6) while the reindex runs: its copies must stay.
    const held = hold('TransactWriteItemsCommand', commitOf('held-6'));
    const post = call('POST', '/api/tickets', body(6, 'held-6'));
    await held.reached;
    const before = await indexSnapshot('TICKET', accountId);
    await tickets.rebuild(accountId);
    expect(await indexSnapshot('TICKET', accountId)).toEqual(before);
    held.release('pass');
    const landed = await post;
    expect(landed.status, landed.text).toBe(201);
    uuids.push(landed.body.ticket.uuid);
    const live = await expectedSample(tickets, accountId, uuids);
    const held6 = live.filter((sk) => sk.startsWith(`p#${keyedTerm(accountId, sampledWord(6, 'tq'))}#`));
    expect(held6.length).toBeGreaterThan(0);
    // Still the orphans beside the live copies: the failed create's pending item is young.
    expect((await sampleOf(tickets, accountId)).map((s) => s.sk)).toEqual(
      [...live, ...orphans.map((o) => o.sk)].sort(),
    );

    // Once the failed create's pending item is past the time a create may run, the sweep deletes its copies.
    await agePendingItems(accountId, 16 * 60 * 1000);
    await tickets.rebuild(accountId);
    expect((await sampleOf(tickets, accountId)).map((s) => s.sk)).toEqual(live);
    await expectTwins(tickets, accountId);
    const settled = await indexSnapshot('TICKET', accountId);
    await tickets.rebuild(accountId);
    expect(await indexSnapshot('TICKET', accountId)).toEqual(settled);
  });
});
