import { describe, expect, it } from 'vitest';
import { batchDeleteAll, batchPutAll, scanAll, tableName } from '#lib/data/store/client.ts';
import { keyString } from '#lib/data/store/items.ts';
import { parseTimestamp } from '#lib/time.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';

/**
 * The bulk seeder (test/support/ticket-seeder.ts) writes the items the creates write: tickets made through the API
 * in an account, the account put back as it was before them, the same tickets seeded (same bodies and creation
 * times, so the same numbers and order keys; a uuid's random bits read as its twin's): every item of the table is
 * the same, attribute for attribute, but what a
 * request writes beside its ticket (its event, the event's place, its rate count, its key's last use: the seeder
 * writes none) and two
 * values of the moment of a write (a directory entry's write token `w`, the round-robin cursor's expiry).
 */
const gateway = useGateway();

const file = {
  agents: [1, 2, 3].map((i) => ({
    email: `agent${i}@seed.test`,
    name: `Agent ${i}`,
    teams: i === 3 ? ['Billing'] : [],
  })),
  teams: [{ name: 'Billing' }],
  categories: [{ slug: 'billing', name: 'Billing', default_team: 'Billing' }],
  auto_assignment: { enabled: true, method: 'round_robin' },
  sla_policies: [{ name: 'All', first_reply_minutes: 60, resolution_minutes: 480 }],
  contacts: [{ email: 'kim@client.test', first_name: 'Kim', last_name: 'Known', phone: '+44 20 7946 0000' }],
};

const heavy = {
  subject: `${Array.from({ length: 29 }, (_, j) => `word${j}x`).join(' ')} heavy`,
  description: 'd',
  requester_email: 'heavy@client.test',
  custom_fields: Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`k${j}`, `v${j % 7}`])),
};
const bodies: Record<string, unknown>[] = [
  ...Array.from({ length: 10 }, (_, i) => ({
    subject: `Printer ${['jam', 'toner', 'fire'][i % 3]} ${i}`,
    description: 'Help.',
    requester_email: i % 4 === 0 ? 'kim@client.test' : `user${i % 3}@client.test`,
    priority: (['low', 'medium', 'high', 'urgent'] as const)[i % 4],
    ...(i % 3 === 0 ? { category_slug: 'billing' } : {}),
    custom_fields: { plan: i % 2 ? 'gold' : 'silver', ...(i % 5 === 0 ? { seats: i } : {}) },
  })),
  heavy,
  { subject: 'Last', description: 'd', requester_email: 'kim@client.test', requester_name: 'K. Known' },
];

type Item = Record<string, unknown>;

/**
 * What a request writes beside its ticket, by the first part of the item's partition key: its event and the
 * event's place, its rate count, its API key's last use.
 */
const besideTheTicket = /^(EVENTS|EVENT_SEQ|RATE|API_KEYS)#/;

/** Every item of the file's table, by key (its own table: this file's account only). */
async function items(): Promise<Map<string, Item>> {
  const all = await scanAll({ TableName: tableName(), ConsistentRead: true });
  return new Map(all.map((item) => [keyString(item), item]));
}

/** The items `after` has that `before` had not, or had otherwise, without what the seeder does not write. */
function written(before: Map<string, Item>, after: Map<string, Item>): Record<string, Item> {
  const out: Record<string, Item> = {};
  for (const [key, item] of after) {
    if (besideTheTicket.test(String(item.pk))) continue;
    if (JSON.stringify(before.get(key)) === JSON.stringify(item)) continue;
    const { w: _token, expires_at: _expiry, ...rest } = item;
    // A create's pending mark (lib/data/index/pending.ts), once its commit deleted the pending item, reads as none.
    if (typeof rest.u === 'string') delete rest.u;
    out[key] = comparable(rest);
  }
  return out;
}

/** Sets as sorted lists: two items are equal whatever order their sets were read in. */
const comparable = (item: Item): Item =>
  Object.fromEntries(Object.entries(item).map(([k, v]) => [k, v instanceof Set ? [...v].sort() : v]));

describe('the ticket seeder', () => {
  it('writes, item for item, what the same creates write through the API', async () => {
    const account = await createTestAccount(file);
    const before = await items();
    const made: { uuid: string; createdUs: number }[] = [];
    for (const body of bodies) {
      const r = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body });
      expect(r.status, r.text).toBe(201);
      made.push({ uuid: r.body.ticket.uuid, createdUs: parseTimestamp(r.body.ticket.created_at) });
    }
    const byApi = await items();
    const apiWrote = written(before, byApi);
    // Some of each kind a create writes, the items each put before its commit (marked) among them.
    expect(Object.keys(apiWrote).length).toBeGreaterThan(bodies.length * 10);
    expect([...byApi.values()].some((item) => typeof item.u === 'string')).toBe(true);

    // The account as it was before the creates.
    await batchDeleteAll([...byApi.keys()].filter((k) => !before.has(k)).map((k) => keyOf(byApi, k)));
    await batchPutAll([...before.values()].filter((item) => byApi.get(keyString(item)) !== item));
    expect(written(before, await items())).toEqual({});

    const seeded = await seedTickets(account.accountId, bodies, {
      createdUs: (i) => made[i]?.createdUs as number,
    });
    expect(seeded.map((t) => t.number)).toEqual(bodies.map((_, i) => i + 1));
    // A uuid's last bits are random: each seeded one named as its created twin is.
    const twin = new Map(seeded.map((t, i) => [t.uuid, made[i]?.uuid as string]));
    const seederWrote = renamed(written(before, await items()), twin);
    expect(Object.keys(seederWrote).sort()).toEqual(Object.keys(apiWrote).sort());
    for (const key of Object.keys(apiWrote)) expect(seederWrote[key], key).toEqual(apiWrote[key]);
  });
});

/** The items with every uuid `names` has replaced by its name. */
function renamed(items: Record<string, Item>, names: Map<string, string>): Record<string, Item> {
  let text = JSON.stringify(items);
  for (const [uuid, name] of names) text = text.replaceAll(uuid, name);
  return JSON.parse(text);
}

const keyOf = (items: Map<string, Item>, key: string) => {
  const item = items.get(key) as Item;
  return { pk: item.pk, sk: item.sk };
};
