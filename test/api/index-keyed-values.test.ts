import { describe, expect, it } from 'vitest';
import { contacts } from '#lib/data/contacts/contact-index.ts';
import { deals } from '#lib/data/deals/deal-index.ts';
import type { Index } from '#lib/data/index/items.ts';
import { orderKeyOfUuid, packOrderKey } from '#lib/data/index/order-key.ts';
import { batchPutAll, getItem } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { textsOf } from '#test/support/erasures.ts';
import { useGateway } from '#test/support/http.ts';
import { partitionItems } from '#test/support/index-snapshot.ts';

/**
 * The index's keys hold no text a person wrote (docs/data-model.md, "Keyed values in keys"): a custom field's
 * value, an address and a search term are named by the account's keyed hash, and a filter, a total and a search
 * look up the hash of what they name, so tickets, deals and contacts are still found exactly (a value that is a
 * prefix of another is another value; a word finds the terms it starts, never one it does not); the reindex
 * rebuilds the same index from the entities. Queries of this account's index partitions only.
 */
const gateway = useGateway();

/** Texts written below, each long enough that no hash's characters spell one by chance. */
const WRITTEN = [
  'platinumtier',
  'ottavio',
  'brambleton',
  'cassandra',
  'whitlock',
  'marmalade',
  'fairweather',
  'quarterly',
  'keyedvalues.test',
  'gooseberry',
  'order#77',
];

/** Every item of the account's index partitions (directories, the dimensions they list, terms and their sample), as text. */
async function indexTexts(accountId: string): Promise<string[]> {
  const partition = partitionItems;
  const texts: string[] = [];
  for (const index of [tickets.index, deals.index, contacts.index] as Index<unknown>[]) {
    const entries = await partition(index.keys.directoryPartition(accountId));
    const dims = entries.map((e) => String(e.sk)).filter((sk) => !sk.startsWith('#'));
    expect(dims.length, index.declaration.entity).toBeGreaterThan(1);
    const items = [
      ...entries,
      ...(await Promise.all(index.keys.termsPartitions(accountId).map(partition))).flat(),
      ...(await partition(index.keys.termSamplePartition(accountId))),
      ...(await Promise.all(dims.map((d) => partition(index.keys.postingPartition(accountId, d))))).flat(),
      ...(await Promise.all(dims.map((d) => partition(index.keys.blockPartition(accountId, d))))).flat(),
    ];
    texts.push(...items.map((item) => textsOf(item).join('\u0001').toLowerCase()));
  }
  return texts;
}

describe('keyed values in the index keys', () => {
  it('name no custom field value, address or word; filters, totals and search stay exact, and the reindex keeps them', {
    timeout: 60_000,
  }, async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await gateway.call(method, path, { key, ...(body === undefined ? {} : { body }) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
      return r.body;
    };
    const ottavio = 'ottavio.brambleton@keyedvalues.test';
    const cassandra = 'cassandra.whitlock@other.test';
    for (const [subject, requester, fields] of [
      [
        'Marmalade order#77 delayed',
        ottavio,
        { plan: 'Platinumtier', ref: 'order#77', note: 'Zoë Fairweather' },
      ],
      ['Marmalades again', ottavio.toUpperCase(), { plan: 'Platinumtierplus', seats: 12 }],
      ['Invoice for Zoë', cassandra, { plan: 'Platinumtier', seats: '12' }],
    ] as const) {
      await call('POST', '/api/tickets', {
        subject,
        description: 'd',
        requester_email: requester,
        custom_fields: fields,
      });
    }
    for (const [name, email, first, last] of [
      ['Brambleton renewal', ottavio, 'Ottavio', 'Brambleton'],
      ['Quarterly upsell', cassandra, 'Cassandra', 'Whitlock'],
      // Deal 3 and contact 3: a word of each is in the terms' sample (term-sample.ts, sampledTerm(3, …)), so that the
      // sample partition is checked with something in it (the words above sample none).
      ['Gooseberrydx crate', 'gooseberrydx@third.test', 'Gooseberryez', 'Third'],
    ] as const) {
      await call('POST', '/api/deals', {
        name,
        amount: '10.00',
        contact_email: email,
        contact_first_name: first,
        contact_last_name: last,
      });
    }

    const subjects = async (query: string) => {
      const page = await call('GET', `/api/tickets?${query}`);
      return {
        total: page.meta.total,
        found: page.data.map((t: { subject: string }) => t.subject).sort(),
      };
    };
    const names = async (path: string) => {
      const page = await call('GET', path);
      const data = page.data as { name?: string; email?: string }[];
      return { total: page.meta.total, found: data.map((d) => d.name ?? d.email).sort() };
    };
    const answers = async () => ({
      plan: await subjects('custom_fields[plan]=Platinumtier'),
      planPlus: await subjects('custom_fields[plan]=Platinumtierplus'),
      planCase: await subjects('custom_fields[plan]=platinumtier'),
      withHash: await subjects(`custom_fields[ref]=${encodeURIComponent('order#77')}`),
      unicode: await subjects(`custom_fields[note]=${encodeURIComponent('Zoë Fairweather')}`),
      numberText: await subjects('custom_fields[seats]=12'),
      address: await subjects(`requester_email=${encodeURIComponent(ottavio.toUpperCase())}`),
      addressAndPlan: await subjects(
        `requester_email=${encodeURIComponent(ottavio)}&custom_fields[plan]=Platinumtier`,
      ),
      planAndOpen: await subjects('custom_fields[plan]=Platinumtier&status=open'),
      prefix: await subjects('search=marmal'),
      longer: await subjects('search=marmalades'),
      noPrefix: await subjects('search=marmaladex'),
      separator: await subjects(`search=${encodeURIComponent('order#7')}`),
      addressWord: await subjects('search=ottavio.bramb'),
      domain: await subjects('search=keyedvalues'),
      accented: await subjects(`search=${encodeURIComponent('zoë')}`),
      twoWords: await subjects('search=marmalade%20again'),
      number: await subjects('search=3'),
      dealWord: await names('/api/deals?search=quarterl'),
      dealContact: await names('/api/deals?search=cassand'),
      dealByContact: await names(`/api/deals?contact_email=${encodeURIComponent(ottavio)}`),
      contactByEmail: await names(`/api/contacts?email=${encodeURIComponent(cassandra.toUpperCase())}`),
      contactWord: await names('/api/contacts?search=brambl'),
      contactDomain: await names('/api/contacts?search=other.test'),
    });
    const expected = {
      plan: { total: 2, found: ['Invoice for Zoë', 'Marmalade order#77 delayed'] },
      planPlus: { total: 1, found: ['Marmalades again'] },
      planCase: { total: 0, found: [] },
      withHash: { total: 1, found: ['Marmalade order#77 delayed'] },
      unicode: { total: 1, found: ['Marmalade order#77 delayed'] },
      numberText: { total: 2, found: ['Invoice for Zoë', 'Marmalades again'] },
      address: { total: 2, found: ['Marmalade order#77 delayed', 'Marmalades again'] },
      addressAndPlan: { total: 1, found: ['Marmalade order#77 delayed'] },
      planAndOpen: { total: 2, found: ['Invoice for Zoë', 'Marmalade order#77 delayed'] },
      prefix: { total: 2, found: ['Marmalade order#77 delayed', 'Marmalades again'] },
      longer: { total: 1, found: ['Marmalades again'] },
      noPrefix: { total: 0, found: [] },
      separator: { total: 1, found: ['Marmalade order#77 delayed'] },
      addressWord: { total: 2, found: ['Marmalade order#77 delayed', 'Marmalades again'] },
      domain: { total: 2, found: ['Marmalade order#77 delayed', 'Marmalades again'] },
      accented: { total: 1, found: ['Invoice for Zoë'] },
      twoWords: { total: 1, found: ['Marmalades again'] },
      number: { total: 1, found: ['Invoice for Zoë'] },
      dealWord: { total: 1, found: ['Quarterly upsell'] },
      dealContact: { total: 1, found: ['Quarterly upsell'] },
      dealByContact: { total: 1, found: ['Brambleton renewal'] },
      contactByEmail: { total: 1, found: [cassandra] },
      contactWord: { total: 1, found: [ottavio] },
      contactDomain: { total: 1, found: [cassandra] },
    };
    expect(await answers()).toEqual(expected);

    for (const engine of [deals, contacts]) {
      const sample = await partitionItems(engine.index.keys.termSamplePartition(account.accountId));
      expect(sample.length, engine.index.types.entity).toBeGreaterThan(0);
    }
    // No key or attribute of the index names what was written.
    const texts = await indexTexts(account.accountId);
    expect(WRITTEN.filter((w) => texts.some((t) => t.includes(w)))).toEqual([]);

    // The reindex rebuilds the same index from the entities: the same answers, still nothing written in keys.
    for (const engine of [tickets, deals, contacts] as const) await engine.rebuild(account.accountId);
    expect(await answers()).toEqual(expected);
    const rebuilt = await indexTexts(account.accountId);
    expect(WRITTEN.filter((w) => rebuilt.some((t) => t.includes(w)))).toEqual([]);
  });

  it('a table written before them (values and words in keys, no migration): the reindex deletes those items', async () => {
    const account = await createTestAccount();
    const id = account.accountId;
    const created = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: {
        subject: 'Marmalade',
        description: 'd',
        requester_email: 'old@keyedvalues.test',
        custom_fields: { plan: 'Platinumtier' },
      },
    });
    expect(created.status, created.text).toBe(201);
    const orderKey = orderKeyOfUuid(created.body.ticket.uuid) as string;
    // What this ticket's index was before keyed keys: its custom field and a word as written.
    const keys = tickets.index.keys;
    const old = 'cf#plan#Platinumtier';
    const oldItems = [
      { ...keys.directoryEntry(id, old), type: 'index_dimension' },
      { ...keys.posting(id, old, orderKey), type: 'ticket_posting' },
      { ...keys.counter(id, old, 0), n: 1 },
      { ...keys.block(id, old, 1), k: new Set([packOrderKey(orderKey)]) },
      { ...keys.prefixTerm(id, 'marmalade', orderKey), type: 'ticket_term' },
    ];
    await batchPutAll(oldItems);
    await tickets.rebuild(id);
    const left = await Promise.all(oldItems.map((item) => getItem({ pk: item.pk, sk: item.sk })));
    // Every old item but the directory entry (the reindex never deletes an entry) is gone.
    expect(left.map((item) => item !== undefined)).toEqual([true, false, false, false, false]);
    const listed = await gateway.call('GET', '/api/tickets?custom_fields[plan]=Platinumtier&search=marm', {
      key: account.apiKey,
    });
    expect(listed.body.meta.total).toBe(1);
  });
});
