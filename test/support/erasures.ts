import { expect } from 'vitest';
import { bodyOf, eventText } from '#lib/data/events.ts';
import { eventKeys } from '#lib/data/keys.ts';
import { scanAll, tableName } from '#lib/data/store/client.ts';
import { ATTR, entityOf } from '#lib/data/store/items.ts';
import type { Gateway } from './http.ts';

/**
 * The erasure tests' people and their checks (decisions.md, "Deleting, restoring and erasing"): a person is
 * created everywhere the API lets one be written (a deal and its contact, tickets they requested and others
 * naming them, messages by them and about them, kept idempotent answers), and a table read finds every text of
 * theirs, in any attribute, nested maps, lists, sets and binary bodies (events) alike.
 */
export interface TestPerson {
  email: string;
  first: string;
  last: string;
  phone: string;
}

export const personNamed = (tag: string, first: string, last: string, phone: string): TestPerson => ({
  email: `${first.toLowerCase()}.${last.toLowerCase()}@${tag}.test`,
  first,
  last,
  phone,
});

/** What a person leaves: the texts to look for. */
export const tracesOf = (p: TestPerson) => [p.email, p.first, p.last, p.phone];

/** Creates the person's data through the API; answers the uuids it made. */
export async function writePerson(
  gateway: Gateway,
  key: string,
  agentId: number,
  p: TestPerson,
  tag: string,
) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await gateway.call(method, path, { key, ...(body === undefined ? {} : { body }), headers });
    expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
    return r.body;
  };
  const deal = await call(
    'POST',
    '/api/deals',
    {
      name: `Renewal for ${p.first} ${p.last}`,
      amount: '1200.50',
      currency: 'EUR',
      contact_email: p.email,
      contact_first_name: p.first,
      contact_last_name: p.last,
      contact_phone: p.phone,
    },
    { 'Idempotency-Key': `deal-${tag}` },
  );
  const ticket = await call(
    'POST',
    '/api/tickets',
    {
      subject: `${p.first} cannot log in`,
      description: `Hello, this is ${p.first} ${p.last}, call me on ${p.phone}.`,
      requester_email: p.email,
      requester_name: `${p.first} ${p.last}`,
    },
    { 'Idempotency-Key': `ticket-${tag}` },
  );
  const uuid = ticket.ticket.uuid as string;
  await call(
    'POST',
    `/api/tickets/${uuid}/messages`,
    { body: `Any news? ${p.first}`, author: 'requester' },
    {
      'Idempotency-Key': `msg-${tag}`,
    },
  );
  await call('POST', `/api/tickets/${uuid}/messages`, {
    body: `Dear ${p.first} ${p.last}, we wrote to ${p.email}.`,
    visibility: 'public',
    agent_id: agentId,
  });
  await call('PATCH', `/api/tickets/${uuid}`, { subject: `${p.last} still cannot log in`, priority: 'high' });
  const second = await call('POST', '/api/tickets', {
    subject: 'Second question',
    description: 'About invoices',
    requester_email: p.email.toUpperCase(),
  });
  return { deal: deal.data.uuid as string, tickets: [uuid, second.ticket.uuid as string] };
}

/** Every text of an item: strings, numbers, set members, binary bodies (as UTF-8), in maps and lists. */
export function textsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (value instanceof Set) for (const v of value) textsOf(v, out);
  else if (Array.isArray(value)) for (const v of value) textsOf(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      textsOf(v, out);
    }
  }
  return out;
}

/**
 * The one Scan of the suite, of the erasure test's own table (test/api/erasures.test.ts): every item, as stored,
 * and each as the lower-cased text of all its attributes.
 */
export async function tableItems(): Promise<Record<string, unknown>[]> {
  return scanAll({ TableName: tableName() });
}
export function itemTexts(items: Record<string, unknown>[]): { key: string; text: string }[] {
  const unpacked = unpackedEvents(items);
  return items.map((item) => ({
    key: `${item.pk} ${item.sk}`,
    text: textsOf(unpacked.get(item) ?? item)
      .join('\u0001')
      .toLowerCase(),
  }));
}

/**
 * Items stored packed (lib/data/store/packed.ts) as their text: an entity's packed fields, and an event's head
 * (`enc`) with its parts' bytes joined and unpacked, its parts then holding nothing of their own. Without it a
 * person's text in a packed description or event would go unseen by the checks.
 */
function unpackedEvents(items: Record<string, unknown>[]): Map<Record<string, unknown>, unknown> {
  const out = new Map<Record<string, unknown>, unknown>();
  for (const item of items.filter((i) => Array.isArray(i[ATTR.packed]))) out.set(item, readable(item));
  for (const head of items.filter((i) => i.enc !== undefined)) {
    const parts = items
      .filter((i) => i.pk === head.pk && String(i.sk).startsWith(`${head.sk}#`))
      .sort((a, b) => eventKeys.parse(String(a.sk)).part - eventKeys.parse(String(b.sk)).part);
    out.set(head, readable(head, parts));
    for (const part of parts) out.set(part, { ...part, body: '' });
  }
  return out;
}

/** One item as its texts read (an event head with its `parts`, when it has any): unpacked where it is packed. */
export function readable(
  item: Record<string, unknown>,
  parts: Record<string, unknown>[] = [],
): Record<string, unknown> {
  if (item.enc !== undefined)
    return { ...item, body: eventText(item, [item, ...parts].map(bodyOf)).toString('utf8') };
  if (Array.isArray(item[ATTR.packed])) return { ...item, ...entityOf<Record<string, unknown>>(item) };
  return item;
}

/** Every item by its keys alone (the table's and its indexes'), lower-cased: what no person's text may be part of. */
export function keyTexts(items: Record<string, unknown>[]): { key: string; text: string }[] {
  const keyNames = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk'];
  return items.map((item) => ({
    key: `${item.pk} ${item.sk}`,
    text: keyNames
      .map((name) => String(item[name] ?? ''))
      .join('\u0001')
      .toLowerCase(),
  }));
}

/** The items (by key) holding any of the texts. */
export function holding(items: { key: string; text: string }[], texts: string[]): string[] {
  const needles = texts.map((t) => t.toLowerCase());
  return items.filter((i) => needles.some((n) => i.text.includes(n))).map((i) => i.key);
}
