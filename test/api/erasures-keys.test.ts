import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore } from '#infra/local/mail.ts';
import { folderMailEraser } from '#lib/data/mail-store.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { newInboundId, receiveMail } from '#lib/email/receive.ts';
import { runErasure } from '#lib/erasures/job.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { CAPACITY_DESCRIPTION } from '#test/support/capacity-shapes.ts';
import {
  holding,
  itemTexts,
  keyTexts,
  personNamed,
  type TestPerson,
  tableItems,
  tracesOf,
  writePerson,
} from '#test/support/erasures.ts';
import { useGateway } from '#test/support/http.ts';
import { dimensionItems } from '#test/support/index-snapshot.ts';

/**
 * An erased person leaves nothing in the table's keys either (decisions.md, "Deleting, restoring and erasing";
 * issue 37, item 8): the person is in several custom fields of their tickets (their address, full name, phone, its
 * digits, a note with their first name, their local part), in tags, subjects, messages, a deal, their contact and
 * mail (a mail of theirs opening a ticket, a control's mail copying them). After the erasure a Scan of every item
 * (keys, index keys and attributes) finds none of their address, local part, names or phone digits, while the
 * control person's values are all still found; and the dimensions their values named (counters, blocks, directory
 * entries) are gone, not only the postings.
 */
const gateway = useGateway();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-erasure-keys-'));
  await mkdir(join(dir, 'raw'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const person = personNamed('keys', 'Philippa', 'Wintersgill', '+44 20 7946 0555');
const control = personNamed('keys', 'Barnabas', 'Oakenshaw', '+44 20 7946 0123');

const localPart = (p: TestPerson) => p.email.slice(0, p.email.indexOf('@'));
const digits = (p: TestPerson) => p.phone.replace(/\D/g, '');
/** Everything of the person a key or an attribute could hold. */
const traces = (p: TestPerson) => [...tracesOf(p), localPart(p), digits(p), digits(p).slice(-8)];

/** The custom fields a ticket of this person holds: their values in every shape the finding met. */
const fieldsOf = (p: TestPerson) => ({
  billing_email: p.email,
  customer: `${p.first} ${p.last}`,
  callback: p.phone,
  callback_digits: digits(p),
  callback_number: Number(digits(p)),
  note: `VIP ${p.first}`,
  login: localPart(p),
});

describe('an erasure and the index keys', () => {
  it("leaves none of the person's values in any key or attribute of the table; the control's stay", {
    timeout: 60_000,
  }, async () => {
    const support = `support@k${randomBytes(4).toString('hex')}.test`;
    const account = await createTestAccount({ agents: agentsFile(1), email: { addresses: [support] } });
    const key = account.apiKey;
    const agent = account.agents[0]?.id as number;
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await gateway.call(method, path, { key, ...(body === undefined ? {} : { body }) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
      return r.body;
    };
    const store = folderMailStore(dir);
    const receive = async (from: TestPerson, headers: string[], body: string) => {
      const inboundId = newInboundId();
      const rawKey = `raw/${inboundId}.eml`;
      await writeFile(
        join(dir, rawKey),
        `${[`From: ${from.first} ${from.last} <${from.email}>`, `To: ${support}`, ...headers].join('\r\n')}\r\n\r\n${body}\r\n`,
      );
      const [record] = await receiveMail(
        {
          inboundId,
          rawKey,
          receivedAt: formatTimestamp(Date.now() * 1000),
          mailFrom: from.email,
          recipients: [support],
        },
        store,
      );
      expect(record?.outcome).toBe('new_ticket');
      return record?.ticketUuid as string;
    };

    const made: Record<string, string[]> = {};
    for (const p of [person, control]) {
      const base = await writePerson(gateway, key, agent, p, p === person ? 'p' : 'c');
      const fielded = await call('POST', '/api/tickets', {
        subject: `Callback for ${p.first} ${p.last} on ${p.phone}`,
        // Long enough to be stored packed (lib/data/store/packed.ts), as a real mail's text is.
        description: `Reach ${localPart(p)} at ${p.email}. ${CAPACITY_DESCRIPTION}`,
        requester_email: p.email,
        requester_name: `${p.first} ${p.last}`,
        custom_fields: fieldsOf(p),
      });
      const uuid = fielded.ticket.uuid as string;
      await call('POST', `/api/tickets/${uuid}/messages`, {
        body: `${p.first} asked for a callback on ${p.phone}.`,
        visibility: 'internal',
        agent_id: agent,
      });
      // A field changed later: the ticket leaves one dimension the person's value named and enters another.
      await call('PATCH', `/api/tickets/${uuid}`, {
        custom_fields: { note: `VIP ${p.first} ${p.last}`, account_owner: p.last },
        tags: [`vip-${p.first.toLowerCase()}`, localPart(p)],
      });
      // Their mail: one opening a ticket of theirs, and one the other person sends copying them.
      const byMail = await receive(
        p,
        [`Subject: ${p.first} ${p.last} here`, `Message-ID: <${randomBytes(6).toString('hex')}@keys.test>`],
        `Please call ${p.phone}.`,
      );
      made[p.email] = [...base.tickets, uuid, byMail];
    }
    const copying = await receive(
      control,
      [
        `Cc: ${person.first} ${person.last} <${person.email}>`,
        'Subject: Introducing a colleague',
        `Message-ID: <${randomBytes(6).toString('hex')}@keys.test>`,
      ],
      'See the copy.',
    );
    expect(copying).toBeDefined();

    // Before: the person is in attributes (their tickets, contact, messages, mail), never in a key (a dimension's
    // value, a search term, a contact's address: each named by the account's keyed hash), nor is the control.
    const items = await tableItems();
    const before = itemTexts(items);
    for (const text of traces(person)) expect(holding(before, [text]), text).not.toEqual([]);
    // Their events and their ticket's description are among them, stored packed (lib/data/store/packed.ts): the
    // check reads those unpacked.
    const packed = new Set(
      items.filter((i) => i.enc !== undefined || i.zp !== undefined).map((i) => `${i.pk} ${i.sk}`),
    );
    const packedHolding = holding(before, [`Reach ${localPart(person)}`]).filter((k) => packed.has(k));
    expect(packedHolding.some((k) => k.startsWith('EVENTS#'))).toBe(true);
    expect(packedHolding.some((k) => k.startsWith('TICKETS#'))).toBe(true);
    expect(holding(keyTexts(items), [...traces(person), ...traces(control)])).toEqual([]);
    // The dimensions of the person's ticket values, as the person's tickets stand before the erasure.
    const personDims = new Set<string>();
    for (const uuid of made[person.email] ?? []) {
      const stored = await tickets.getByUuid(account.accountId, uuid);
      for (const d of tickets.index.dimensionsOf(account.accountId, stored?.entity as Ticket)) {
        if (!tickets.index.isStatsDimension(d)) personDims.add(d);
      }
    }

    const started = await call('POST', '/api/erasures', { email: person.email });
    await runErasure(account.accountId, started.data.id, { mail: folderMailEraser(dir) });
    expect((await call('GET', `/api/erasures/${started.data.id}`)).data.status).toBe('completed');

    // No item of the table holds any of the person's values, in its keys or its attributes.
    const after = itemTexts(await tableItems());
    expect(holding(after, traces(person))).toEqual([]);
    for (const text of traces(control)) expect(holding(after, [text]), text).not.toEqual([]);

    // What the person's values named, beyond the postings: no counter, block or directory entry is left of a
    // dimension no ticket is in any more.
    const erasedNow = await Promise.all(
      (made[person.email] ?? []).map((uuid) => tickets.getByUuid(account.accountId, uuid)),
    );
    const stillIn = new Set(
      erasedNow.flatMap((s) => (s ? tickets.index.dimensionsOf(account.accountId, s.entity) : [])),
    );
    const left = [];
    for (const dim of [...personDims].filter((d) => !stillIn.has(d))) {
      const items = await dimensionItems(tickets.index.keys, account.accountId, dim);
      if (items.postings.length + items.blocks.length > 0 || items.entry) left.push({ dim, items });
    }
    expect(personDims.size).toBeGreaterThan(6);
    expect(left).toEqual([]);

    // The control's tickets are still found by their values: a filter on each custom field, their address, a search.
    for (const [field, value] of Object.entries(fieldsOf(control))) {
      const listed = await call('GET', `/api/tickets?custom_fields[${field}]=${encodeURIComponent(value)}`);
      expect(listed.meta.total, field).toBe(field === 'note' ? 0 : 1);
    }
    const own = await call('GET', `/api/tickets?requester_email=${encodeURIComponent(control.email)}`);
    // Two written as the person's were, the one with custom fields, two opened by their mail.
    expect(own.meta.total).toBe(5);
    const searched = await call('GET', `/api/tickets?search=${control.last.toLowerCase().slice(0, 5)}`);
    expect(searched.meta.total).toBeGreaterThanOrEqual(3);
  });
});
