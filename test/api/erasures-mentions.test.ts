import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore } from '#infra/local/mail.ts';
import { emailKeys, messageKeys, objectRefKeys, personRefKeys, trashKeys } from '#lib/data/keys.ts';
import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import { folderMailEraser } from '#lib/data/mail-store.ts';
import { getItem, queryAll, tableName } from '#lib/data/store/client.ts';
import { newInboundId, type ReceivedMail, receiveMail } from '#lib/email/receive.ts';
import { addressHash } from '#lib/erasures/address-hash.ts';
import { erasureStep, runErasure } from '#lib/erasures/job.ts';
import { replayErasures } from '#lib/erasures/replay.ts';
import { formatTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import {
  holding,
  personNamed,
  readable,
  type TestPerson,
  textsOf,
  tracesOf,
} from '#test/support/erasures.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Erasing a person who is on mail of tickets they did not request (decisions.md, "Erasing a person"): their reply
 * on someone else's thread, a copy (Cc) of a third person's new ticket, a mail of theirs that opened no ticket
 * (an automatic answer), and a Message-ID holding their address. Their person references find all of it; after
 * the erasure no stored item of those tickets, messages, events, inbound log, Message-ID items or references,
 * nor any raw mail, holds their address, name or phone (each read by Query or GetItem of the partitions this
 * file wrote: never a Scan), while the other requesters' names and words stay.
 */
// `erasures replay` reads the whole ledger, which holds this file's erasures only: the file's own table.
const gateway = useGateway();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mentions-'));
  await mkdir(join(dir, 'raw'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const person = personNamed('mentions', 'Philippa', 'Quennell', '+44 20 7946 0555');
const alba = personNamed('other', 'Albertine', 'Anders', '+33 1 70 36 39 11');
const bruno = personNamed('other', 'Brunhilde', 'Berglund', '+49 30 901 2233');
const carla = personNamed('other', 'Carlotta', 'Castellane', '');
const dora = personNamed('other', 'Dorothea', 'Drummond', '');
/** A Message-ID holding the person's address literally (a client that names its mail after its sender). */
const personMessageId = person.email;

interface Scene {
  account: TestAccount;
  support: string;
  /** Alba's ticket (the person replied on it), Bruno's (the person was copied). */
  albaTicket: string;
  brunoTicket: string;
  /** Carla's ticket (her second mail copied the person), closed; the follow-up the person's mail opened on it. */
  carlaTicket: string;
  /** The follow-up the person's mail opened on Carla's closed ticket; Dora's ticket copying them, in the trash. */
  followUpTicket: string;
  trashedTicket: string;
  messageIds: string[];
  rawKeys: Record<string, string>;
  /** Receives a mail (its raw file kept under `name`) as the inbound function does. */
  receive: (
    name: string,
    mailFrom: string,
    headers: string[],
    body: string,
  ) => Promise<InboundRecord | undefined>;
}

async function scene(): Promise<Scene> {
  const domain = `m${randomBytes(4).toString('hex')}.test`;
  const support = `support@${domain}`;
  const account = await createTestAccount({ agents: agentsFile(1), email: { addresses: [support] } });
  const store = folderMailStore(dir);
  const rawKeys: Record<string, string> = {};
  const receive = async (name: string, mailFrom: string, headers: string[], body: string) => {
    const inboundId = newInboundId();
    const rawKey = `raw/${inboundId}.eml`;
    await writeFile(join(dir, rawKey), `${headers.join('\r\n')}\r\n\r\n${body}\r\n`);
    const mail: ReceivedMail = {
      inboundId,
      rawKey,
      receivedAt: formatTimestamp(Date.now() * 1000),
      mailFrom,
      recipients: [support],
    };
    const [record] = await receiveMail(mail, store);
    // The account's own copy of the mail (the delivery kept above is gone once it is made).
    rawKeys[name] = String(record?.rawKey);
    return record;
  };
  const tag = randomBytes(3).toString('hex');
  const ids = {
    alba: `a1.${tag}@other.test`,
    bruno: `b1.${tag}@other.test`,
    albaAgain: `a2.${tag}@other.test`,
    carla: `c1.${tag}@other.test`,
    dora: `d1.${tag}@other.test`,
  };
  // The person's name and phone are known by their contact (a deal of theirs).
  const deal = await gateway.call('POST', '/api/deals', {
    key: account.apiKey,
    body: {
      name: 'Renewal',
      amount: '10.00',
      currency: 'EUR',
      contact_email: person.email,
      contact_first_name: person.first,
      contact_last_name: person.last,
      contact_phone: person.phone,
    },
  });
  expect(deal.status, deal.text).toBe(201);
  const opened = await receive(
    'alba',
    alba.email,
    [
      `From: "${alba.first} ${alba.last}" <${alba.email}>`,
      `To: ${support}`,
      'Subject: Printer jams',
      `Message-ID: <${ids.alba}>`,
    ],
    `The printer jams again. ${alba.first}`,
  );
  expect(opened?.outcome).toBe('new_ticket');
  // (a) The person replies on Alba's thread, copying her, under a Message-ID holding their address.
  const replied = await receive(
    'person',
    person.email,
    [
      `From: "${person.first} ${person.last}" <${person.email}>`,
      `To: ${support}`,
      `Cc: ${alba.email}`,
      'Subject: Re: Printer jams',
      `Message-ID: <${personMessageId}>`,
      `In-Reply-To: <${ids.alba}>`,
    ],
    `Mine too. ${person.first}, ${person.phone}`,
  );
  expect(replied).toMatchObject({ outcome: 'threaded', ticketUuid: opened?.ticketUuid });
  // Alba answers the person's mail: her reply's In-Reply-To holds the person's address.
  const again = await receive(
    'albaAgain',
    alba.email,
    [
      `From: "${alba.first} ${alba.last}" <${alba.email}>`,
      `To: ${support}`,
      'Subject: Re: Printer jams',
      `Message-ID: <${ids.albaAgain}>`,
      `In-Reply-To: <${personMessageId}>`,
    ],
    `Fixed on my side. ${alba.last}`,
  );
  expect(again).toMatchObject({ outcome: 'threaded', ticketUuid: opened?.ticketUuid });
  // (b) Bruno opens a ticket copying the person, and names them.
  const copied = await receive(
    'bruno',
    bruno.email,
    [
      `From: "${bruno.first} ${bruno.last}" <${bruno.email}>`,
      `To: ${support}`,
      `Cc: "${person.first} ${person.last}" <${person.email}>`,
      'Subject: Invoices late',
      `Message-ID: <${ids.bruno}>`,
    ],
    `Invoices are late. Copying ${person.first} ${person.last}. ${bruno.first}`,
  );
  expect(copied?.outcome).toBe('new_ticket');
  // (c) An automatic answer of the person's that threads nowhere: logged, no ticket.
  const automatic = await receive(
    'automatic',
    person.email,
    [
      `From: "${person.first} ${person.last}" <${person.email}>`,
      `To: ${support}`,
      `Subject: Out of office: ${person.first}`,
      'Auto-Submitted: auto-replied',
      `Message-ID: <ooo.${tag}@mentions.test>`,
    ],
    `${person.first} is away.`,
  );
  expect(automatic).toMatchObject({ outcome: 'automatic', ticketUuid: null });
  // Carla's ticket, closed: the person's reply to it opens a follow-up (Carla its requester, the person's words
  // its description): Carla's second mail copied the person, so they may (a Cc of the ticket's mail).
  const carlaOpened = await receive(
    'carla',
    carla.email,
    [`From: ${carla.email}`, `To: ${support}`, 'Subject: Delivery', `Message-ID: <${ids.carla}>`],
    'Where is my parcel?',
  );
  const carlaCopied = await receive(
    'carlaCc',
    carla.email,
    [
      `From: ${carla.email}`,
      `To: ${support}`,
      `Cc: ${person.email}`,
      'Subject: Re: Delivery',
      `Message-ID: <c2.${tag}@other.test>`,
      `In-Reply-To: <${ids.carla}>`,
    ],
    'Copying my neighbour.',
  );
  expect(carlaCopied).toMatchObject({ outcome: 'threaded' });
  const closed = await gateway.call('PATCH', `/api/tickets/${carlaOpened?.ticketUuid}`, {
    key: account.apiKey,
    body: { status: 'closed' },
  });
  expect(closed.status, closed.text).toBe(200);
  const followUp = await receive(
    'followUp',
    person.email,
    [
      `From: ${person.email}`,
      `To: ${support}`,
      'Subject: Re: Delivery',
      `Message-ID: <fu.${tag}@mentions.test>`,
      `In-Reply-To: <${ids.carla}>`,
    ],
    'Mine never came either.',
  );
  expect(followUp).toMatchObject({ outcome: 'follow_up' });
  // Dora's ticket copying the person, then deleted: in the trash when the erasure comes.
  const trashed = await receive(
    'dora',
    dora.email,
    [
      `From: ${dora.email}`,
      `To: ${support}`,
      `Cc: ${person.email}`,
      'Subject: Lunch',
      `Message-ID: <${ids.dora}>`,
    ],
    'Lunch on Friday?',
  );
  const deleted = await gateway.call('DELETE', `/api/tickets/${trashed?.ticketUuid}`, {
    key: account.apiKey,
  });
  expect(deleted.status, deleted.text).toBe(200);
  // The person's own ticket, and a bounce of a mail to them threading into it: a delivery report that names
  // them only in its text (its raw copy quotes their address).
  const own = await receive(
    'own',
    person.email,
    [
      `From: ${person.email}`,
      `To: ${support}`,
      'Subject: My own question',
      `Message-ID: <own.${tag}@mentions.test>`,
    ],
    'Is it ready?',
  );
  expect(own?.outcome).toBe('new_ticket');
  const bounce = await receive(
    'bounce',
    '',
    [
      `From: MAILER-DAEMON@relay.${domain}`,
      `To: ${support}`,
      'Subject: Undelivered Mail Returned to Sender',
      `Message-ID: <dsn.${tag}@relay.${domain}>`,
      `In-Reply-To: <own.${tag}@mentions.test>`,
    ],
    `Delivery to <${person.email}> failed permanently: mailbox full.`,
  );
  expect(bounce).toMatchObject({ ticketUuid: own?.ticketUuid });
  // An agent's internal note on Alba's ticket naming the person.
  const note = await gateway.call('POST', `/api/tickets/${opened?.ticketUuid}/messages`, {
    key: account.apiKey,
    body: {
      body: `${person.first} called about it`,
      visibility: 'internal',
      agent_id: account.agents[0]?.id,
    },
  });
  expect(note.status, note.text).toBe(201);
  return {
    account,
    support,
    albaTicket: opened?.ticketUuid as string,
    brunoTicket: copied?.ticketUuid as string,
    carlaTicket: carlaOpened?.ticketUuid as string,
    followUpTicket: followUp?.ticketUuid as string,
    trashedTicket: trashed?.ticketUuid as string,
    messageIds: [
      ...Object.values(ids),
      personMessageId,
      `ooo.${tag}@mentions.test`,
      `own.${tag}@mentions.test`,
    ],
    rawKeys,
    receive,
  };
}

/**
 * Every stored text of the scene's partitions, by Query and GetItem: the tickets and their messages as stored,
 * each ticket's references (events, inbound entries), the feed's events, the inbound log, the Message-ID items,
 * the person's references (base and gsi2), the contact's search (API) and the raw mail files.
 */
async function storedTexts(s: Scene): Promise<{ key: string; text: string }[]> {
  const accountId = s.account.accountId;
  const out: { key: string; text: string }[] = [];
  const add = (key: string, value: unknown) =>
    out.push({ key, text: textsOf(value).join('\u0001').toLowerCase() });
  for (const uuid of [s.albaTicket, s.brunoTicket, s.carlaTicket, s.followUpTicket, s.trashedTicket]) {
    add(
      `ticket ${uuid}`,
      (await gateway.call('GET', `/api/tickets/${uuid}`, { key: s.account.apiKey })).body,
    );
    add(`trash ${uuid}`, await getItem(trashKeys.item(accountId, uuid)));
    const messages = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messageKeys.partition(accountId, uuid) },
    });
    for (const m of messages) add(`message ${m.sk}`, m);
    const refs = await queryAll({
      TableName: tableName(),
      IndexName: objectRefKeys.index,
      KeyConditionExpression: 'gsi2pk = :pk',
      ExpressionAttributeValues: { ':pk': objectRefKeys.partition(accountId, uuid) },
    });
    for (const r of refs) {
      const item = await getItem({ pk: String(r.pk), sk: String(r.sk) });
      // An event as its text (stored packed: lib/data/store/packed.ts).
      add(`ref ${r.pk} ${r.sk}`, item && readable(item));
    }
  }
  for (const e of (await readFeedToEnd(gateway.call, s.account.apiKey)).events) add(`event ${e.id}`, e);
  const inbound = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': emailKeys.inboundPartition(accountId) },
  });
  for (const i of inbound) add(`inbound ${i.sk}`, i);
  for (const id of s.messageIds) {
    const hash = createHash('sha256').update(id.toLowerCase()).digest('hex').slice(0, 40);
    add(`message-id ${id}`, await getItem(emailKeys.messageId(accountId, hash)));
  }
  for (const name of Object.keys(s.rawKeys)) {
    // A purged ticket's mail is gone from the folder (the erasure purges a trashed ticket at once).
    const path = join(dir, s.rawKeys[name] as string);
    add(`raw ${name}`, await readFile(path, 'utf8').catch(() => ''));
  }
  return out;
}

const personRefsLeft = async (accountId: string) => {
  const pk = personRefKeys.partition(accountId, addressHash(accountId, person.email));
  const base = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
  });
  const indexed = await queryAll({
    TableName: tableName(),
    IndexName: personRefKeys.index,
    KeyConditionExpression: 'gsi2pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
  });
  return [...base.map((i) => String(i.sk)), ...indexed.map((i) => `gsi2 ${i.gsi2sk}`)].sort();
};

/** What stays of the others: their names, addresses and words; the person's traces: none. */
async function expectErased(s: Scene, p: TestPerson) {
  const texts = await storedTexts(s);
  expect(holding(texts, tracesOf(p))).toEqual([]);
  for (const text of [...tracesOf(alba), ...tracesOf(bruno).slice(0, 3)]) {
    if (text === alba.phone) continue;
    expect(holding(texts, [text]), text).not.toEqual([]);
  }
  expect(await personRefsLeft(s.account.accountId)).toEqual([]);
  const get = async (path: string) => (await gateway.call('GET', path, { key: s.account.apiKey })).body.data;
  const albaTicket = await get(`/api/tickets/${s.albaTicket}`);
  expect(albaTicket).toMatchObject({
    requester: { name: `${alba.first} ${alba.last}`, email: alba.email },
    description: `The printer jams again. ${alba.first}`,
  });
  const bodies = (await get(`/api/tickets/${s.albaTicket}/messages`)).map((m: { body: string }) => m.body);
  expect(bodies).toEqual([
    `The printer jams again. ${alba.first}`,
    '[erased]',
    `Fixed on my side. ${alba.last}`,
    '[erased] called about it',
  ]);
  const brunoTicket = await get(`/api/tickets/${s.brunoTicket}`);
  expect(brunoTicket).toMatchObject({
    requester: { name: `${bruno.first} ${bruno.last}`, email: bruno.email },
    description: `Invoices are late. Copying [erased]. ${bruno.first}`,
  });
  // The follow-up the person's mail opened: Carla's, its description (the person's words) erased.
  const followUp = await get(`/api/tickets/${s.followUpTicket}`);
  expect(followUp).toMatchObject({ requester: { email: carla.email }, description: '[erased]' });
  // …in every copy too (its ticket.created event shows no mail fields to tell it by).
  expect(holding(texts, ['mine never came'])).toEqual([]);
  // Dora's ticket in the trash, copying the person: purged (no restore, no messages left).
  const restore = await gateway.call('POST', `/api/trash/${s.trashedTicket}/restore`, {
    key: s.account.apiKey,
    body: {},
  });
  expect(restore.status).toBe(404);
  const log = await get('/api/email/inbound?limit=100');
  const byPerson = log.filter((e: { from: string | null }) => e.from === null);
  expect(byPerson).toHaveLength(4);
  for (const entry of byPerson) expect(entry.subject).toBe('[erased]');
  // Raw mail: the person's own, the copy sent to them, Alba's reply to their Message-ID and the bounce on their
  // ticket: erased; Dora's mail copying them, on a ticket in the trash, purged with it; Alba's opening mail names
  // none of the person's identifiers and stays.
  const raw = async (name: string) => readFile(join(dir, s.rawKeys[name] as string), 'utf8');
  for (const name of ['person', 'automatic', 'bruno', 'albaAgain', 'carlaCc', 'followUp', 'own', 'bounce']) {
    expect(await raw(name), name).toBe('[erased]');
  }
  await expect(raw('dora')).rejects.toMatchObject({ code: 'ENOENT' });
  expect(await raw('alba')).toContain(alba.email);
  expect(await raw('carla')).toContain(carla.email);
  // Threading by the person's Message-ID is gone with its item; Alba's own ids still thread.
  const idItem = (id: string) =>
    getItem(
      emailKeys.messageId(
        s.account.accountId,
        createHash('sha256').update(id.toLowerCase()).digest('hex').slice(0, 40),
      ),
    );
  expect(await idItem(personMessageId)).toBeUndefined();
  expect(await idItem(s.messageIds[0] as string)).toMatchObject({ ticketUuid: s.albaTicket });
  // Search no longer finds the person's words.
  for (const q of [person.last, person.first]) {
    expect(await get(`/api/tickets?search=${q}`), q).toEqual([]);
  }
}

describe('erasing a person on mail of tickets they did not request', () => {
  // Two accounts with the same mail (one erased as the runner runs, one under faults), written side by side.
  let scenes: Scene[] = [];
  beforeAll(async () => {
    scenes = await Promise.all([scene(), scene()]);
  });
  it('finds their reply, their copy, their automatic mail and their Message-ID; the others stay', async () => {
    const s = scenes[0] as Scene;
    const before = await storedTexts(s);
    expect(holding(before, tracesOf(person)).length).toBeGreaterThan(10);
    // The person's references: one per ticket their mail named (item and gsi2), and the automatic mail's entry.
    const refs = await personRefsLeft(s.account.accountId);
    const tickets = [s.albaTicket, s.brunoTicket, s.carlaTicket, s.followUpTicket, s.trashedTicket];
    expect(refs.filter((r) => !r.startsWith('gsi2 inbound#'))).toEqual(
      [...tickets.map((t) => `ticket#${t}`), ...tickets.map((t) => `gsi2 ticket#${t}`)].sort(),
    );
    expect(refs.filter((r) => r.startsWith('gsi2 inbound#'))).toHaveLength(1);
    const started = await gateway.call('POST', '/api/erasures', {
      key: s.account.apiKey,
      body: { email: person.email },
    });
    expect(started.status, started.text).toBe(202);
    await runErasure(s.account.accountId, started.body.data.id, { mail: folderMailEraser(dir) });
    const done = (
      await gateway.call('GET', `/api/erasures/${started.body.data.id}`, { key: s.account.apiKey })
    ).body.data;
    expect(done.status).toBe('completed');
    // Raw mail: the person's four, Bruno's, Carla's second and Dora's (copied to them), Alba's reply (to their
    // Message-ID), the bounce on their ticket.
    expect(done.counts).toMatchObject({ mail: 9, trash: 1 });
    await expectErased(s, person);

    // A restore from a backup taken before (simulated: the person's reply received again as the backup held it,
    // under its Message-ID; no index names the person any more): `erasures replay` finds them by the ledger's
    // hash, through their references, and erases it again.
    const back = await s.receive(
      'restored',
      person.email,
      [
        `From: "${person.first} ${person.last}" <${person.email}>`,
        `To: ${s.support}`,
        'Subject: Re: Printer jams',
        `Message-ID: <${personMessageId}>`,
        `In-Reply-To: <${s.messageIds[0]}>`,
      ],
      `Mine too. ${person.first}, ${person.phone}`,
    );
    expect(back).toMatchObject({ outcome: 'threaded', ticketUuid: s.albaTicket });
    expect(await replayErasures({ mail: folderMailEraser(dir) })).toMatchObject({ erasures: 1 });
    expect(holding(await storedTexts(s), tracesOf(person))).toEqual([]);
    expect(await personRefsLeft(s.account.accountId)).toEqual([]);
  });

  it('a step failed at each of its store calls in turn resumes to the same result', {
    timeout: 60_000,
  }, async () => {
    const s = scenes[1] as Scene;
    const id = (
      await gateway.call('POST', '/api/erasures', { key: s.account.apiKey, body: { email: person.email } })
    ).body.data.id as string;
    const modes: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
    const mail = folderMailEraser(dir);
    let failures = 0;
    let steps = 0;
    for (let outcome = 'more'; outcome === 'more'; steps++) {
      expect(steps).toBeLessThan(200);
      // Each step fails once at one of its calls (in turn), then is taken again from the saved progress.
      const at = 3 + (steps % 6);
      const mode = modes[steps % modes.length] as FaultMode;
      try {
        outcome = (
          await withFault({ at, mode }, () => erasureStep(s.account.accountId, id, { stepItems: 3, mail }))
        ).result;
      } catch {
        failures++;
        outcome = await erasureStep(s.account.accountId, id, { stepItems: 3, mail });
      }
    }
    expect(failures).toBeGreaterThan(5);
    await expectErased(s, person);
  });
});
