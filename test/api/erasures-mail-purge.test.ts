import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeWorker } from '#functions/workers.ts';
import { folderMailStore } from '#infra/local/mail.ts';
import { contacts } from '#lib/data/contacts/contact-index.ts';
import { filterDimensions } from '#lib/data/index/dimensions.ts';
import { findMailId } from '#lib/data/mail/message-ids.ts';
import { attachmentsPrefix, folderMailEraser } from '#lib/data/mail-store.ts';
import { isSuppressed, suppressAddress } from '#lib/data/outbox.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { purgeOne } from '#lib/data/trash/purge.ts';
import { outboxPass } from '#lib/email/outbox.ts';
import { newInboundId, type ReceivedMail, receiveMail } from '#lib/email/receive.ts';
import type { Sender } from '#lib/email/senders.ts';
import { receiveSesFeedback } from '#lib/email/ses-feedback.ts';
import { mailToken, tokenAddress } from '#lib/email/tokens.ts';
import { addressHash } from '#lib/erasures/address-hash.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { formatTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { textsOf } from '#test/support/erasures.ts';
import { useGateway } from '#test/support/http.ts';
import { dimensionItems } from '#test/support/index-snapshot.ts';
import { asFunction } from '#test/support/table-actions.ts';

/**
 * The mail side of an erasure and what the purge leaves (decisions.md, "Erasing a person", "The purge"): a delivery
 * report of a mail the service sent the person, and an automatic answer on their ticket, lose their raw mail and
 * attachments; suppressions are keyed by the address's keyed hash (a bounce or complaint after the erasure writes no
 * address); a ticket of an erased person, deleted then purged, leaves no Message-ID item; a purge leaves no counter,
 * block or directory entry of an address nothing holds any more. One account, one mail folder; Queries and GetItems
 * of the partitions written here only.
 */
const gateway = useGateway();
let dir: string;
let account: TestAccount;
let support: string;
let domain: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-erasure-mail-'));
  await mkdir(join(dir, 'raw'));
  domain = `e${randomBytes(4).toString('hex')}.test`;
  support = `support@${domain}`;
  account = await createTestAccount({ agents: agentsFile(1), email: { addresses: [support] } });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const tag = () => randomBytes(4).toString('hex');

/** Keeps a raw mail in the folder and receives it as the inbound function does. */
async function receive(raw: string, mailFrom: string, recipients = [support]) {
  const inboundId = newInboundId();
  const rawKey = `raw/${inboundId}.eml`;
  await writeFile(join(dir, rawKey), raw);
  const mail: ReceivedMail = {
    inboundId,
    rawKey,
    receivedAt: formatTimestamp(Date.now() * 1000),
    mailFrom,
    recipients,
  };
  const [record] = await receiveMail(mail, folderMailStore(dir));
  // The account's own copy of the mail (the delivery kept above is gone once it is made).
  return { record, inboundId, rawKey: String(record?.rawKey) };
}

const plain = (headers: string[], body: string) => `${headers.join('\r\n')}\r\n\r\n${body}\r\n`;

/** A mail with a text attachment (`details.txt`) holding `attached`. */
const withAttachment = (headers: string[], body: string, attached: string) => {
  const boundary = `b-${tag()}`;
  return plain(
    [...headers, 'MIME-Version: 1.0', `Content-Type: multipart/mixed; boundary="${boundary}"`],
    [
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      body,
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      'Content-Disposition: attachment; filename="details.txt"',
      '',
      attached,
      `--${boundary}--`,
    ].join('\r\n'),
  );
};

const attachmentsOf = async (inboundId: string) => {
  const folder = join(dir, attachmentsPrefix(account.accountId, inboundId));
  const names = await readdir(folder).catch(() => [] as string[]);
  return Promise.all(names.map((n) => readFile(join(folder, n), 'utf8')));
};

async function erase(email: string) {
  const started = await gateway.call('POST', '/api/erasures', { key: account.apiKey, body: { email } });
  expect(started.status, started.text).toBe(202);
  await runErasure(account.accountId, started.body.data.id, { mail: folderMailEraser(dir) });
}

/** The person's mail opens a ticket; answers its uuid. */
async function ticketByMail(email: string, messageId: string) {
  const { record } = await receive(
    plain([`From: ${email}`, `To: ${support}`, 'Subject: My order', `Message-ID: <${messageId}>`], 'Where?'),
    email,
  );
  expect(record?.outcome).toBe('new_ticket');
  return record?.ticketUuid as string;
}

/** Every item of the account's suppression partition. */
const suppressions = () =>
  queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': `EMAIL_SUPPRESSED#${account.accountId}` },
    ConsistentRead: true,
  });

describe('the mail of an erased person', () => {
  it('a delivery report of a mail sent to them and an automatic answer on their ticket: raw mail and attachments erased', async () => {
    const person = `dsn.${tag()}@customer.test`;
    const uuid = await ticketByMail(person, `open.${tag()}@customer.test`);
    const reply = await gateway.call('POST', `/api/tickets/${uuid}/messages`, {
      key: account.apiKey,
      body: { body: 'It ships today.', visibility: 'public', agent_id: account.agents[0]?.id },
    });
    expect(reply.status, reply.text).toBe(201);
    const envelopes: string[] = [];
    const relay: Sender = {
      name: 'test relay',
      send: async (mail) => {
        envelopes.push(mail.envelopeFrom);
        return { ok: true, providerMessageId: `prov-${mail.messageId}` };
      },
      close: () => undefined,
    };
    expect((await outboxPass({ sender: relay })).counts).toMatchObject({ sent: 1 });
    // The relay's report, to the reply's envelope sender: logged `bounce` on the person's ticket, no message.
    const report = await receive(
      withAttachment(
        [
          `From: MAILER-DAEMON@relay.${domain}`,
          `To: ${envelopes[0]}`,
          'Subject: Undelivered Mail Returned to Sender',
          `Message-ID: <dsn.${tag()}@relay.${domain}>`,
        ],
        `Delivery to <${person}> failed permanently.`,
        `Final-Recipient: rfc822; ${person}`,
      ),
      '',
      [envelopes[0] as string],
    );
    expect(report.record).toMatchObject({ outcome: 'bounce', ticketUuid: uuid });
    // An out-of-office of their assistant, threading into their ticket (automatic: no change to it).
    const sentId = reply.body.data.email.message_id as string;
    const away = await receive(
      withAttachment(
        [
          `From: assistant@customer.test`,
          `To: ${support}`,
          'Subject: Out of office',
          'Auto-Submitted: auto-replied',
          `Message-ID: <ooo.${tag()}@customer.test>`,
          `In-Reply-To: <${sentId}>`,
        ],
        `I am away; write to ${person} meanwhile.`,
        `Forwarding to ${person}.`,
      ),
      'assistant@customer.test',
    );
    expect(away.record).toMatchObject({ outcome: 'automatic', ticketUuid: uuid });
    for (const mail of [report, away]) {
      expect(await readFile(join(dir, mail.rawKey), 'utf8')).toContain(person);
      expect((await attachmentsOf(mail.inboundId)).join('')).toContain(person);
    }

    await erase(person);
    for (const mail of [report, away]) {
      expect(await readFile(join(dir, mail.rawKey), 'utf8')).toBe('[erased]');
      const attachments = await attachmentsOf(mail.inboundId);
      expect(attachments.length).toBeGreaterThan(0);
      for (const text of attachments) expect(text).toBe('[erased]');
    }
  });

  it('suppressions are kept by the keyed hash of the address: a bounce or complaint after the erasure writes no address', async () => {
    const person = `late.${tag()}@customer.test`;
    const other = `stays.${tag()}@customer.test`;
    await suppressAddress(account.accountId, person, 'bounced');
    await suppressAddress(account.accountId, other, 'bounced');
    expect(await isSuppressed(account.accountId, person)).toBe(true);
    const keysOf = async () => (await suppressions()).map((s) => String(s.sk));
    expect(await keysOf()).toEqual(
      expect.arrayContaining([addressHash(account.accountId, person), addressHash(account.accountId, other)]),
    );
    // The erasure's leftovers delete the person's suppression (by the hash); the other's stays.
    await erase(person);
    expect(await isSuppressed(account.accountId, person)).toBe(false);
    expect(await isSuppressed(account.accountId, other)).toBe(true);
    expect(await keysOf()).not.toContain(addressHash(account.accountId, person));

    // SES's late feedback: a complaint, and a permanent bounce of a mail the service no longer knows (each to the
    // tagged envelope sender a mail of the service had: only such a source counts).
    const envelope = tokenAddress(support, mailToken(account.accountId, 'ZZ-999999', 2));
    expect(
      await receiveSesFeedback({
        eventType: 'Complaint',
        mail: { source: envelope, destination: [person] },
        complaint: { complainedRecipients: [{ emailAddress: person }] },
      }),
    ).toBe('complained');
    expect(
      await receiveSesFeedback({
        eventType: 'Bounce',
        mail: { source: envelope, destination: [person.toUpperCase()] },
        bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: person.toUpperCase() }] },
      }),
    ).toBe('bounced');
    // Suppressed again (nothing is sent to it), and no item holds the address.
    expect(await isSuppressed(account.accountId, person)).toBe(true);
    const stored = await suppressions();
    expect(stored.map((s) => String(s.sk))).toContain(addressHash(account.accountId, person));
    expect(textsOf(stored).filter((t) => t.toLowerCase().includes(person))).toEqual([]);
  });
});

describe('the purge', () => {
  it('a ticket of an erased person, deleted then purged, leaves no Message-ID item of its mail', async () => {
    const person = `purged.${tag()}@customer.test`;
    const opening = `open.${tag()}@customer.test`;
    const uuid = await ticketByMail(person, opening);
    const again = `again.${tag()}@customer.test`;
    const { record } = await receive(
      plain(
        [
          `From: ${person}`,
          `To: ${support}`,
          'Subject: Re: My order',
          `Message-ID: <${again}>`,
          `In-Reply-To: <${opening}>`,
        ],
        'Still waiting.',
      ),
      person,
    );
    expect(record).toMatchObject({ outcome: 'threaded', ticketUuid: uuid });
    for (const id of [opening, again]) expect(await findMailId(account.accountId, id), id).toBeDefined();
    await erase(person);
    const deleted = await gateway.call('DELETE', `/api/tickets/${uuid}`, { key: account.apiKey });
    expect(deleted.status, deleted.text).toBe(200);
    expect(
      await purgeOne(account.accountId, uuid, Date.parse(deleted.body.data.purge_at) * 1000 + 1000),
    ).toMatchObject({
      messages: 1,
    });
    for (const id of [opening, again]) expect(await findMailId(account.accountId, id), id).toBeUndefined();
  });

  it("removes an address's empty counters, blocks and directory entry with its last object, not before", async () => {
    const key = account.apiKey;
    const requester = `req.${tag()}@client.test`;
    const made = [];
    for (const subject of ['First', 'Second']) {
      const r = await gateway.call('POST', '/api/tickets', {
        key,
        body: { subject, description: 'Please', requester_email: requester },
      });
      expect(r.status, r.text).toBe(201);
      made.push(r.body.ticket.uuid as string);
    }
    const contactEmail = `contact.${tag()}@client.test`;
    const deal = await gateway.call('POST', '/api/deals', {
      key,
      body: { name: 'Renewal', amount: '5.00', contact_email: contactEmail, contact_first_name: 'Cora' },
    });
    expect(deal.status, deal.text).toBe(201);
    const ticketDim = dimension.email(account.accountId, requester);
    const contactDim = filterDimensions(contacts.index.declaration, account.accountId, {
      email: contactEmail,
    })[0] as string;
    const left = (engine: typeof tickets | typeof contacts, dim: string) =>
      dimensionItems(engine.index.keys, account.accountId, dim);
    const purge = async (path: string, uuid: string) => {
      const deleted = await gateway.call('DELETE', `${path}/${uuid}`, { key });
      expect(deleted.status, deleted.text).toBe(200);
      // As the purge function (its DynamoDB actions checked against its grant after the file).
      const asPurgeWorker = asFunction(purgeWorker.name, purgeOne);
      return asPurgeWorker(account.accountId, uuid, Date.parse(deleted.body.data.purge_at) * 1000 + 1000);
    };
    const before = await left(tickets, ticketDim);
    expect(before.entry).toBe(true);
    expect(before.postings.length).toBeGreaterThan(2);

    // One ticket of the address purged: the other's posting, its counter and the entry stay.
    await purge('/api/tickets', made[0] as string);
    const one = await left(tickets, ticketDim);
    expect(one.entry).toBe(true);
    expect(one.postings.filter((sk) => !sk.startsWith('#COUNT'))).toHaveLength(1);
    const listed = await gateway.call('GET', `/api/tickets?requester_email=${requester}`, { key });
    expect(listed.body.meta.total).toBe(1);

    // The last one: nothing of the address is left in the ticket index.
    await purge('/api/tickets', made[1] as string);
    expect(await left(tickets, ticketDim)).toEqual({ postings: [], blocks: [], entry: false });
    const none = await gateway.call('GET', `/api/tickets?requester_email=${requester}`, { key });
    expect(none.body.meta.total).toBe(0);

    // A contact's address, in the contact index: its deal first (a contact with deals cannot be deleted).
    expect((await left(contacts, contactDim)).entry).toBe(true);
    await purge('/api/deals', deal.body.data.uuid);
    await purge('/api/contacts', deal.body.data.contact.uuid);
    expect(await left(contacts, contactDim)).toEqual({ postings: [], blocks: [], entry: false });
  });
});
