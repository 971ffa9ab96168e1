import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { domainToASCII } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailEraser, folderMailStore } from '#lib/data/mail-store.ts';
import { outboxPass } from '#lib/email/outbox.ts';
import { receiveMail } from '#lib/email/receive.ts';
import type { Sender } from '#lib/email/senders.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { keepRaw } from '#test/support/kept-mail.ts';

/**
 * Addresses as people have them (decisions.md, "The e-mail channel"; "Deleting, restoring and erasing": any
 * address the service can hold is accepted): an apostrophe, a quoted local part, an internationalized domain in
 * either form. One parser for mail, the API and the erasure: whoever opens a ticket by mail can be erased, and an
 * address too long to hold never becomes another one.
 */
const gateway = useGateway();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-addresses-'));
  await mkdir(join(dir, 'raw'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;

async function mailAccount(extra: Record<string, unknown> = {}) {
  const domain = `a${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({
    agents: agentsFile(1),
    email: { addresses: [`support@${domain}`], acknowledge: true },
    ...extra,
  });
  return { ...account, address: `support@${domain}` };
}

/** A mail `From:` the given header value, kept and received as the inbound handler does. */
async function mailFrom(account: { address: string }, from: string, envelopeFrom: string) {
  const kept = await keepRaw(
    dir,
    `From: ${from}\r\nTo: ${account.address}\r\nSubject: hello ${randomBytes(3).toString('hex')}\r\n` +
      `Message-ID: <${randomBytes(6).toString('hex')}@customer.test>\r\n\r\nPlease help.\r\n`,
    { mailFrom: envelopeFrom, address: account.address },
  );
  const [record] = await receiveMail(kept, folderMailStore(dir));
  return record;
}

describe('a sender with an address as people have them', () => {
  const tag = randomBytes(3).toString('hex');
  const books = `bücher-${tag}.example`;
  const cafe = `café-${tag}.example`;
  // [From header, the address the erasure is asked for, the address the ticket holds]: an IDN domain is mailed
  // in one form (UTF-8 in the header, or its ASCII form) and erased in the other.
  const people = [
    [`o'brien@${tag}.example`, `O'Brien@${tag}.example`, `o'brien@${tag}.example`],
    [`"John Doe" <"john doe"@${tag}.example>`, `"john doe"@${tag}.example`, `"john doe"@${tag}.example`],
    [
      `=?utf-8?q?J=C3=BCrgen?= <jurgen@${books}>`,
      `jurgen@${domainToASCII(books)}`,
      `jurgen@${domainToASCII(books)}`,
    ],
    [`rita@${domainToASCII(cafe)}`, `Rita@${cafe}`, `rita@${domainToASCII(cafe)}`],
  ] as const;

  it.each(people)('%s opens a ticket, and an erasure of %s erases it', async (from, erase, held) => {
    const account = await mailAccount();
    const record = await mailFrom(account, from, 'bounce@customer.test');
    expect(record).toMatchObject({ outcome: 'new_ticket' });
    const path = `/api/tickets/${record?.ticketUuid}`;
    const before = (await gateway.call('GET', path, { key: account.apiKey })).body.data as Json;
    // An internationalized domain is held in its ASCII form, whichever form the mail used.
    expect(before.requester.email).toBe(held);

    const started = await gateway.call('POST', '/api/erasures', {
      key: account.apiKey,
      body: { email: erase },
    });
    expect(started.status, started.text).toBe(202);
    await runErasure(account.accountId, started.body.data.id, { mail: folderMailEraser(dir) });
    const done = (await gateway.call('GET', `/api/erasures/${started.body.data.id}`, { key: account.apiKey }))
      .body.data as Json;
    expect(done).toMatchObject({ status: 'completed', counts: { tickets: 1 } });
    const after = (await gateway.call('GET', path, { key: account.apiKey })).body.data as Json;
    expect(after.requester).toMatchObject({ email: null, name: null, erased: true });
  });

  it("is accepted the same way by the API: a requester, a deal's contact, and found in either form", async () => {
    const account = await mailAccount();
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key: account.apiKey, ...(body ? { body } : {}) });
    for (const address of ["o'brien@x.example", '"john doe"@x.example', 'Jürgen@Bücher.Example']) {
      const ticket = await call('POST', '/api/tickets', {
        subject: 'Hello',
        description: 'Help',
        requester_email: address,
      });
      expect(ticket.status, ticket.text).toBe(201);
      const deal = await call('POST', '/api/deals', {
        name: 'Renewal',
        amount: '10.00',
        currency: 'EUR',
        contact_email: address,
        contact_first_name: 'Pat',
        contact_last_name: 'Doe',
      });
      expect(deal.status, deal.text).toBe(201);
    }
    // The domain in its ASCII form (as it is compared); the local part as given. Either form finds it.
    const idn = await call(
      'GET',
      `/api/tickets?requester_email=${encodeURIComponent('jürgen@bücher.example')}`,
    );
    expect(idn.body.data.map((t: Json) => t.requester.email)).toEqual(['Jürgen@xn--bcher-kva.example']);
    const contact = await call(
      'GET',
      `/api/contacts?email=${encodeURIComponent('JÜRGEN@xn--bcher-kva.example')}`,
    );
    expect(contact.body.data.map((c: Json) => c.email)).toEqual(['Jürgen@xn--bcher-kva.example']);
    for (const bad of ['not an address', 'a@b@', '"unterminated@x.example', 'a@-x-.example']) {
      const refused = await call('POST', '/api/erasures', { email: bad });
      expect(refused.status, bad).toBe(422);
    }
  });
});

describe('a sender address over 254 characters', () => {
  it('is logged `rejected` with its reason: never cut into another address, no ticket, nothing queued', async () => {
    const account = await mailAccount();
    const long = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(22)}.example`;
    expect(long.length).toBe(287);
    const record = await mailFrom(account, `Long <${long}>`, long);
    expect(record).toMatchObject({
      outcome: 'rejected',
      reason: 'sender_address_too_long',
      ticketUuid: null,
    });
    const logged = (await gateway.call('GET', '/api/email/inbound', { key: account.apiKey })).body
      .data as Json[];
    expect(logged).toMatchObject([{ outcome: 'rejected', reason: 'sender_address_too_long', from: null }]);
    expect((await gateway.call('GET', '/api/tickets', { key: account.apiKey })).body.data).toEqual([]);
    const sent: string[][] = [];
    const relay: Sender = {
      name: 'test relay',
      send: async (mail) => {
        sent.push(mail.to);
        return { ok: true, providerMessageId: `p-${mail.messageId}` };
      },
      close: () => undefined,
    };
    await outboxPass({ sender: relay });
    expect(sent).toEqual([]);
  });
});
