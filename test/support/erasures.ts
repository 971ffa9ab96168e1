import { expect } from 'vitest';
import { scanAll, tableName } from '#lib/data/store/client.ts';
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
  return items.map((item) => ({
    key: `${item.pk} ${item.sk}`,
    text: textsOf(item).join('\u0001').toLowerCase(),
  }));
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
