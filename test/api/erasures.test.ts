import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { deleteEmptyDimension } from '#lib/data/erasures.ts';
import { orderKeys } from '#lib/data/keys.ts';
import { folderMailEraser } from '#lib/data/mail-store.ts';
import { OutboxBusy, suppressAddress } from '#lib/data/outbox.ts';
import { batchDeleteAll, batchPutAll, dynamo, getItem } from '#lib/data/store/client.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { acknowledge, outboxPass } from '#lib/email/outbox.ts';
import { folderSender, type Sender } from '#lib/email/senders.ts';
import { addressHash } from '#lib/erasures/address-hash.ts';
import { erasureStep, runErasure } from '#lib/erasures/job.ts';
import { replayErasures } from '#lib/erasures/replay.ts';
import { canonicalJson } from '#lib/http/idempotency.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import {
  holding,
  itemTexts,
  personNamed,
  tableItems,
  tracesOf,
  writePerson,
} from '#test/support/erasures.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Erasing a person (decisions.md, "Deleting, restoring and erasing"), through the API and the erasure job as the
 * runner runs it: afterwards no item of the account holds the person's e-mail, name parts or phone in any
 * attribute (the one Scan of the suite, of this file's own table), while the control person's data is all still
 * there; tickets, deals, search, kept answers and the feed show the person erased; after a restore of the items
 * as they were before, `erasures replay` erases the person again from the ledger's hash.
 */
const gateway = useGateway();

const person = personNamed('erase', 'Zephyrine', 'Quillfeather', '+44 20 7946 0991');
const control = personNamed('control', 'Bartholomew', 'Inkwright', '+44 20 7946 0123');

describe('POST /api/erasures', () => {
  // Bounded work (one person, a handful of tickets), past 30 s only at load ~25 (two fresh clones side by side with
  // other work): the time is not what it checks.
  it('erases the person from every item of the account, and leaves the control person whole', async () => {
    // The account sends mail (its agents' public replies, acknowledgements): the outbox's places hold the person too.
    const account = await createTestAccount({
      agents: [{ email: 'ana@erasures.test', name: 'Ana' }],
      email: { addresses: ['support@desk.erasures.test'], acknowledge: true },
    });
    const key = account.apiKey;
    const agent = account.agents[0]?.id as number;
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      gateway.call(method, path, { key, ...(body === undefined ? {} : { body }), headers });
    const made = await writePerson(gateway, key, agent, person, 'p');
    const controlMade = await writePerson(gateway, key, agent, control, 'c');

    // Outbound mail: each person's first ticket acknowledged (as a mail opening it would be), then one outbox
    // pass: the agent's reply to each is sent (an .eml file in the folder), the person's acknowledgement refused
    // for good by a relay quoting their address (kept as the item's error text); then the person's address
    // bounced (suppressed).
    // One of the person's tickets in the trash: purged by the erasure, with everything it holds (its
    // mail too: an agent's reply sent and an acknowledgement, below).
    const trashed = await call('POST', '/api/tickets', {
      subject: `Duplicate from ${person.first}`,
      description: 'Sent twice',
      requester_email: person.email,
    });
    const trashedReply = await call('POST', `/api/tickets/${trashed.body.ticket.uuid}/messages`, {
      body: `Hello ${person.first}, merged.`,
      visibility: 'public',
      agent_id: agent,
    });
    expect(trashedReply.status, trashedReply.text).toBe(201);
    const mailDir = await mkdtemp(join(tmpdir(), 'deskpipe-erase-'));
    const config = await getAccountConfig(account.accountId);
    for (const [who, opened] of [
      [person, made.tickets[0]],
      [person, trashed.body.ticket.uuid],
      [control, controlMade.tickets[0]],
    ] as const) {
      const ticket = (await findTicket(account.accountId, opened as string))?.entity;
      expect(await acknowledge(account.accountId, config as never, ticket as never, who.email)).toBe(
        'queued',
      );
    }
    const files = folderSender(join(mailDir, 'sent'));
    const relay: Sender = {
      name: 'test relay',
      send: async (mail) =>
        mail.messageId.startsWith('ack.') && mail.to.includes(person.email)
          ? { ok: false, permanent: true, error: `550 5.1.1 <${person.email}>: no such user here` }
          : files.send(mail),
      close: () => undefined,
    };
    const sent = await outboxPass({ sender: relay });
    expect(sent.counts).toMatchObject({ sent: 4, failed: 2 });
    await suppressAddress(account.accountId, person.email, 'bounced');
    // A reply to the person still queued when the erasure comes: taken out of the outbox, never sent.
    const queued = await call('POST', `/api/tickets/${made.tickets[1]}/messages`, {
      body: 'One more thing.',
      visibility: 'public',
      agent_id: agent,
    });
    expect(queued.body.data.email.delivery.status).toBe('queued');
    const sentFiles = async () =>
      Promise.all(
        (await readdir(join(mailDir, 'sent'))).map((f) => readFile(join(mailDir, 'sent', f), 'utf8')),
      );
    expect((await sentFiles()).filter((raw) => raw.includes(person.email))).toHaveLength(2);
    // A sender's acknowledgement counters are named by the address's keyed hash: an unkeyed SHA-256 of it could be
    // computed back from a guessed address, before and after the erasure.
    const rateOf = (address: string) => addressHash(account.accountId, address).slice(0, 40);
    const sha256Of = (address: string) => createHash('sha256').update(address).digest('hex').slice(0, 40);
    const rateItems = (items: Record<string, unknown>[], address: string) =>
      items.filter(
        (i) => String(i.pk).startsWith('EMAIL_ACK_RATE#') && String(i.sk).startsWith(rateOf(address)),
      );
    // The trashed ticket goes to the trash only now, its reply sent and its acknowledgement refused.
    expect((await call('DELETE', `/api/tickets/${trashed.body.ticket.uuid}`)).status).toBe(200);
    const feedStart = (await readFeedToEnd(gateway.call, key)).after;
    const stored = await tableItems();
    expect(holding(itemTexts(stored), tracesOf(person)).length).toBeGreaterThan(10);
    expect(rateItems(stored, person.email)).toHaveLength(1);
    expect(stored.filter((i) => `${i.pk} ${i.sk}`.includes(sha256Of(person.email)))).toEqual([]);

    // Bad input: a 422 on email, nothing started.
    for (const body of [{}, { email: 'not an address' }, { email: 42 }]) {
      const bad = await call('POST', '/api/erasures', body);
      expect(bad.status, bad.text).toBe(422);
      expect(Object.keys(bad.body.errors)).toEqual(['email']);
    }
    // Scope: erasures:write, checked first.
    const narrow = await createKey(account.accountId, { name: 'n', scopes: ['tickets:write'] });
    const refused = await gateway.call('POST', '/api/erasures', {
      key: narrow.api_key ?? '',
      body: { email: person.email },
    });
    expect(refused.status).toBe(403);

    const idem = { 'Idempotency-Key': 'erase-zephyrine' };
    const started = await call('POST', '/api/erasures', { email: person.email.toUpperCase() }, idem);
    expect(started.status, started.text).toBe(202);
    const id = started.body.data.id as string;
    expect(started.body.data).toEqual({
      id,
      status: 'running',
      requested_at: expect.any(String),
      completed_at: null,
      counts: {},
    });
    expect((await call('POST', '/api/erasures', { email: person.email.toUpperCase() }, idem)).body).toEqual(
      started.body,
    );
    expect((await call('GET', `/api/erasures/${id}`)).body.data.status).toBe('running');
    expect((await call('GET', '/api/erasures/ers_0000000000000aaaaaaaaaa')).status).toBe(404);

    await runErasure(account.accountId, id, { mail: folderMailEraser(mailDir) });

    const done = (await call('GET', `/api/erasures/${id}`)).body.data;
    expect(done).toMatchObject({ id, status: 'completed', completed_at: expect.any(String) });
    expect(done.counts).toMatchObject({ contact: 1, tickets: 2, deals: 1, trash: 1 });
    expect((await call('POST', `/api/trash/${trashed.body.ticket.uuid}/restore`, {})).status).toBe(404);
    expect(done.counts.events).toBeGreaterThan(5);
    expect(done.counts.idempotency).toBeGreaterThanOrEqual(3);

    // No item of the account holds any of the person's texts; the control person's are all there.
    const after = itemTexts(await tableItems());
    expect(holding(after, tracesOf(person))).toEqual([]);
    // The erasure request's own kept answer: its fingerprint is keyed, so hashing a guessed body finds nothing.
    const guess = canonicalJson(['POST', '/api/erasures', { email: person.email.toUpperCase() }]);
    expect(holding(after, [createHash('sha256').update(guess).digest('hex')])).toEqual([]);
    for (const text of tracesOf(control)) expect(holding(after, [text]), text).not.toEqual([]);
    expect(after.some((i) => i.text.includes('[erased]'))).toBe(true);
    // The outbox's places: the acknowledgement counters of the person's address (keyed by its hash) gone, the
    // control's kept; the person's sent mail erased in the folder, the control's whole.
    const afterItems = await tableItems();
    expect(rateItems(afterItems, person.email)).toEqual([]);
    expect(rateItems(afterItems, control.email)).toHaveLength(1);
    expect(done.counts.email_outbound).toBeGreaterThanOrEqual(3);
    expect(done.counts.mail).toBe(2);
    const withdrawn = (await call('GET', `/api/tickets/${made.tickets[1]}/messages`)).body.data.find(
      (m: { id: string }) => m.id === queued.body.data.id,
    );
    expect(withdrawn.email).toMatchObject({ to: ['[erased]'], delivery: { status: 'failed', attempts: 0 } });
    expect((await outboxPass({ sender: relay })).read).toBe(0);
    const mails = await sentFiles();
    expect(mails.filter((raw) => raw === '[erased]')).toHaveLength(2);
    expect(
      holding(
        mails.map((text, i) => ({ key: String(i), text: text.toLowerCase() })),
        tracesOf(person),
      ),
    ).toEqual([]);
    expect(mails.filter((raw) => raw.includes(control.email) && raw.includes(control.last))).toHaveLength(2);

    // What the API shows of it.
    const ticket = (await call('GET', `/api/tickets/${made.tickets[0]}`)).body.data;
    expect(ticket.requester).toMatchObject({ name: null, email: null, phone: null, erased: true });
    expect(ticket.description).toBe('[erased]');
    expect(ticket.subject).toBe('[erased] still cannot log in');
    const messages = (await call('GET', `/api/tickets/${made.tickets[0]}/messages`)).body.data;
    expect(messages.map((m: { body: string }) => m.body)).toEqual([
      '[erased]',
      '[erased]',
      'Dear [erased], we wrote to [erased].',
    ]);
    const deal = (await call('GET', `/api/deals/${made.deal}`)).body.data;
    expect(deal.contact).toEqual({ uuid: expect.any(String), full_name: null, email: null, erased: true });
    const controlDeal = (await call('GET', `/api/deals?per_page=10`)).body.data.find(
      (d: { uuid: string }) => d.uuid !== made.deal,
    );
    expect({ amount: deal.amount, stage: deal.stage }).toEqual({ amount: 1200.5, stage: controlDeal.stage });
    for (const query of [
      `search=${person.first}`,
      `requester_email=${person.email}`,
      'search=quillfeather',
    ]) {
      expect((await call('GET', `/api/tickets?${query}`)).body.data, query).toEqual([]);
    }
    expect((await call('GET', `/api/contacts?email=${person.email}`)).body.data).toEqual([]);
    // The control person still finds both their tickets (the search term of their address).
    expect((await call('GET', `/api/tickets?search=${control.first}`)).body.data).toHaveLength(2);
    // A kept answer replays, with the person erased.
    const replay = await call(
      'POST',
      '/api/tickets',
      {
        subject: `${person.first} cannot log in`,
        description: `Hello, this is ${person.first} ${person.last}, call me on ${person.phone}.`,
        requester_email: person.email,
        requester_name: `${person.first} ${person.last}`,
      },
      { 'Idempotency-Key': 'ticket-p' },
    );
    expect(replay.status).toBe(201);
    expect(replay.body.ticket.requester).toMatchObject({ email: null, erased: true });
    // The receivers' event: uuids only.
    const events = (await readFeedToEnd(gateway.call, key, { after: feedStart })).events;
    const erased = events.filter((e) => e.type === 'contact.erased');
    expect(erased).toHaveLength(1);
    expect(erased[0]?.data.object).toEqual({
      uuid: deal.contact.uuid,
      tickets: expect.arrayContaining(made.tickets),
      deals: [made.deal],
    });

    // A restore from a backup taken before the erasure (every item put back as it was then; the ledger, kept
    // since, says who was erased): the replay erases the person again, the control person stays.
    const kept = new Set(stored.map((i) => `${i.pk} ${i.sk}`));
    const since = (await tableItems()).filter(
      (i) => !kept.has(`${i.pk} ${i.sk}`) && !String(i.pk).startsWith('ERASURE_LEDGER'),
    );
    await batchDeleteAll(since.map((i) => ({ pk: i.pk, sk: i.sk })));
    await batchPutAll(stored);
    expect(holding(itemTexts(await tableItems()), tracesOf(person)).length).toBeGreaterThan(10);
    const replayed = await replayErasures();
    expect(replayed.erasures).toBe(1);
    expect(replayed.items_changed).toBeGreaterThan(10);
    const restored = itemTexts(await tableItems());
    expect(holding(restored, tracesOf(person))).toEqual([]);
    for (const text of tracesOf(control)) expect(holding(restored, [text]), text).not.toEqual([]);
    expect(await replayErasures()).toEqual({ erasures: 0, items_changed: 0 });

    // Again: idempotent, nothing left to change.
    const again = await call('POST', '/api/erasures', { email: person.email });
    await runErasure(account.accountId, again.body.data.id);
    const second = (await call('GET', `/api/erasures/${again.body.data.id}`)).body.data;
    expect(second.status).toBe('completed');
    expect(Object.values(second.counts).reduce((a: number, b) => a + Number(b), 0)).toBe(0);
  }, 90_000);

  it("learns every name of the person's tickets before it rewrites any: a name only a later ticket gives is erased on all", async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    const address = `twonames-${randomBytes(3).toString('hex')}@erasures.test`;
    // Two tickets of one address under two names, each naming the other: whichever the job takes first holds a
    // name only the other one gives.
    const made: string[] = [];
    for (const [name, other] of [
      ['Octavia Pennywhistle', 'Marchetti'],
      ['Tavi Marchetti', 'Pennywhistle'],
    ] as const) {
      const r = await gateway.call('POST', '/api/tickets', {
        key,
        body: {
          subject: `Laptop for ${other}`,
          description: 'd',
          requester_email: address,
          requester_name: name,
        },
      });
      expect(r.status, r.text).toBe(201);
      made.push(r.body.ticket.uuid);
    }
    const id = (await gateway.call('POST', '/api/erasures', { key, body: { email: address } })).body.data.id;
    await runErasure(account.accountId, id);
    for (const uuid of made) {
      const ticket = (await gateway.call('GET', `/api/tickets/${uuid}`, { key })).body.data;
      expect(ticket.subject).toBe('Laptop for [erased]');
    }
  });

  it("rechecks every object's copies at the end: a copy its index did not show yet at the object's turn is erased", async () => {
    const account = await createTestAccount({ agents: [{ email: 'ana@lag.test', name: 'Ana' }] });
    const lagging = personNamed('lag', 'Evangeline', 'Thornbury', '+44 20 7946 0777');
    const made = await writePerson(gateway, account.apiKey, account.agents[0]?.id as number, lagging, 'l');
    const ticket = made.tickets[0] as string;
    // The index behind (as a global secondary index can be, just after a write): the first read of the ticket's
    // references does not show its newest copy yet.
    let hidden = '';
    dynamo.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        const input = args.input as {
          IndexName?: string;
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        const output = result.output as { Items?: Record<string, unknown>[] };
        const pk = input.ExpressionAttributeValues?.[':pk'];
        if (
          !hidden &&
          input.IndexName &&
          pk === `OBJECT_REFS#${account.accountId}#${ticket}` &&
          output.Items?.length
        ) {
          hidden = String(output.Items.at(-1)?.sk);
          output.Items = output.Items.slice(0, -1);
        }
        return result;
      },
      { step: 'initialize', name: 'laggingIndex' },
    );
    try {
      const id = (
        await gateway.call('POST', '/api/erasures', { key: account.apiKey, body: { email: lagging.email } })
      ).body.data.id;
      await runErasure(account.accountId, id);
      expect(
        (await gateway.call('GET', `/api/erasures/${id}`, { key: account.apiKey })).body.data.status,
      ).toBe('completed');
    } finally {
      dynamo.middlewareStack.remove('laggingIndex');
    }
    expect(hidden).not.toBe('');
    const items = itemTexts(await tableItems()).filter((i) =>
      i.text.includes(account.accountId.toLowerCase()),
    );
    expect(holding(items, tracesOf(lagging))).toEqual([]);
  });

  it('an address the account does not know completes with zero counts', async () => {
    const account = await createTestAccount();
    const started = await gateway.call('POST', '/api/erasures', {
      key: account.apiKey,
      body: { email: 'nobody@unknown.test' },
    });
    expect(started.status).toBe(202);
    await runErasure(account.accountId, started.body.data.id);
    const done = await gateway.call('GET', `/api/erasures/${started.body.data.id}`, { key: account.apiKey });
    expect(done.body.data).toMatchObject({ status: 'completed', counts: {} });
  });
});

describe('an erasure under faults and races', () => {
  const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
  const person2 = personNamed('faults', 'Ottoline', 'Brackenridge', '+33 1 70 36 39 50');

  it('every store call of each step failed in turn, the runner stopped between steps: the same erased result', {
    timeout: 120_000,
  }, async () => {
    const account = await createTestAccount({ agents: [{ email: 'ana@faults.test', name: 'Ana' }] });
    const agent = account.agents[0]?.id as number;
    const made = await writePerson(gateway, account.apiKey, agent, person2, 'f');
    await writePerson(gateway, account.apiKey, agent, control, 'fc');
    // A failed create's orphan: a marked posting of the person's address whose ticket never landed (an hour ago).
    const orphan = orderKeys.of((Date.now() - 3_600_000) * 1000, 999_999);
    await batchPutAll([
      {
        ...tickets.index.keys.posting(
          account.accountId,
          dimension.email(account.accountId, person2.email),
          orphan,
        ),
        u: 1,
      },
    ]);
    const started = await gateway.call('POST', '/api/erasures', {
      key: account.apiKey,
      body: { email: person2.email },
    });
    const id = started.body.data.id as string;
    // Steps of 3 items (pages of 3), so the job stops between many of its moves. Each step is tried with its 1st call failed, then its 2nd, …, until it passes with no call failed (a
    // failed step is a runner that died there: the next try resumes from the progress saved before it).
    let failures = 0;
    let steps = 0;
    for (let outcome = 'more'; outcome === 'more'; steps++) {
      expect(steps).toBeLessThan(500);
      for (let at = 1; ; at++) {
        const mode = MODES[(at - 1 + steps) % MODES.length] as FaultMode;
        try {
          outcome = (
            await withFault({ at, mode }, () => erasureStep(account.accountId, id, { stepItems: 3 }))
          ).result;
          break;
        } catch {
          failures++;
        }
      }
    }
    // Every step made at least its two reads (the record, its progress) and failed at each call in turn.
    expect(failures).toBeGreaterThanOrEqual(2 * steps);
    expect(steps).toBeGreaterThan(3);
    const done = await gateway.call('GET', `/api/erasures/${id}`, { key: account.apiKey });
    expect(done.body.data.status).toBe('completed');
    const items = itemTexts(await tableItems()).filter((i) =>
      i.text.includes(account.accountId.toLowerCase()),
    );
    expect(holding(items, tracesOf(person2))).toEqual([]);
    for (const text of tracesOf(control)) expect(holding(items, [text]), text).not.toEqual([]);
    const ticket = (await gateway.call('GET', `/api/tickets/${made.tickets[0]}`, { key: account.apiKey }))
      .body;
    expect(ticket.data).toMatchObject({ subject: '[erased] still cannot log in', description: '[erased]' });
    // Totals equal a recount: the erasure moved the index as any change does.
    const counts = await tickets.counts(account.accountId, [dimension.all]);
    await tickets.rebuild(account.accountId);
    expect(await tickets.counts(account.accountId, [dimension.all])).toEqual(counts);
  });

  it('a mail being sent when the erasure reaches it: the step waits for its outcome; sent once, then erased', async () => {
    const account = await createTestAccount({
      agents: [{ email: 'ana@busy.test', name: 'Ana' }],
      email: { addresses: ['support@desk.busy.test'] },
    });
    const key = account.apiKey;
    const busy = personNamed('busy', 'Leopoldine', 'Marchbanks', '+39 06 6982 0001');
    const ticket = (
      await gateway.call('POST', '/api/tickets', {
        key,
        body: { subject: 'Invoice', description: 'Wrong total', requester_email: busy.email },
      })
    ).body.ticket;
    const reply = await gateway.call('POST', `/api/tickets/${ticket.uuid}/messages`, {
      key,
      body: { body: 'Fixed.', visibility: 'public', agent_id: account.agents[0]?.id },
    });
    expect(reply.body.data.email.delivery.status).toBe('queued');
    // A relay that holds the mail until the test lets it answer: the outbox's claim is live meanwhile.
    const sent: string[] = [];
    let answer: () => void = () => undefined;
    let taken: () => void = () => undefined;
    const sending = new Promise<void>((resolve) => {
      taken = resolve;
    });
    const relay: Sender = {
      name: 'held relay',
      send: async (mail) => {
        taken();
        await new Promise<void>((resolve) => {
          answer = resolve;
        });
        sent.push(mail.messageId);
        return { ok: true, providerMessageId: `prov-${mail.messageId}` };
      },
      close: () => undefined,
    };
    const pass = outboxPass({ sender: relay });
    await sending;
    const id = (await gateway.call('POST', '/api/erasures', { key, body: { email: busy.email } })).body.data
      .id;
    await expect(runErasure(account.accountId, id)).rejects.toThrow(OutboxBusy);
    const messages = async () =>
      (await gateway.call('GET', `/api/tickets/${ticket.uuid}/messages`, { key })).body.data as {
        email?: { to: string[]; delivery: { status: string } };
      }[];
    // Untouched while it is being sent: still to the person, its outcome not yet known.
    expect((await messages()).find((m) => m.email)?.email?.to).toEqual([busy.email]);
    answer();
    expect((await pass).counts).toMatchObject({ sent: 1 });
    await runErasure(account.accountId, id);
    expect((await gateway.call('GET', `/api/erasures/${id}`, { key })).body.data.status).toBe('completed');
    expect((await messages()).find((m) => m.email)?.email).toMatchObject({
      to: ['[erased]'],
      delivery: { status: 'sent' },
    });
    expect(sent).toEqual([reply.body.data.email.message_id]);
  });

  it("the address's directory entry, deleted by an erasure, is put back by the reindex once the person writes again", async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    const address = `again-${randomBytes(3).toString('hex')}@race.test`;
    const dim = dimension.email(account.accountId, address);
    const keys = tickets.index.keys;
    const entryKey = keys.directoryEntry(account.accountId, dim);
    // The address's dimension emptied (its one ticket deleted), then its leftovers deleted as an erasure's last
    // step does: the counters and the directory entry.
    const first = await gateway.call('POST', '/api/tickets', {
      key,
      body: { subject: 'Once', description: 'd', requester_email: address },
    });
    expect((await gateway.call('DELETE', `/api/tickets/${first.body.ticket.uuid}`, { key })).status).toBe(
      200,
    );
    const removed = await deleteEmptyDimension(
      keys.postingPartition(account.accountId, dim),
      keys.blockPartition(account.accountId, dim),
      entryKey,
      keys.isCounterSort,
    );
    expect(removed).toBeGreaterThan(1);
    expect(await getItem({ ...entryKey })).toBeUndefined();
    // The person writes again, through this process, which remembers having written the entry: none is written.
    const again = await gateway.call('POST', '/api/tickets', {
      key,
      body: { subject: 'Again', description: 'd', requester_email: address },
    });
    expect(again.status).toBe(201);
    const listed = await gateway.call('GET', `/api/tickets?requester_email=${encodeURIComponent(address)}`, {
      key,
    });
    expect(listed.body.data.map((t: { subject: string }) => t.subject)).toEqual(['Again']);
    // The reindex puts a person's entries back whatever the process remembers: the directory is whole again.
    await tickets.rebuild(account.accountId);
    expect(await getItem({ ...entryKey })).toBeDefined();
  });

  it('a write racing the erasure: erased if it lands before the erasure passes its object, kept after', async () => {
    const account = await createTestAccount({ agents: [{ email: 'ana@race.test', name: 'Ana' }] });
    const key = account.apiKey;
    const agent = account.agents[0]?.id as number;
    const racer = personNamed('race', 'Wilhelmina', 'Thistlewood', '+49 30 901820');
    const made = await writePerson(gateway, key, agent, racer, 'r');
    const id = (await gateway.call('POST', '/api/erasures', { key, body: { email: racer.email } })).body.data
      .id;
    // Started, not yet at the ticket: a PATCH naming the person lands before the erasure reaches it.
    const early = await gateway.call('PATCH', `/api/tickets/${made.tickets[0]}`, {
      key,
      body: { subject: `Escalated for ${racer.first}` },
    });
    expect(early.status).toBe(200);
    // Racing the erasure: a PATCH of the second ticket, at the same time as its steps.
    const [, racing] = await Promise.all([
      runErasure(account.accountId, id),
      gateway.call('PATCH', `/api/tickets/${made.tickets[1]}`, {
        key,
        body: { subject: `Callback ${racer.last}` },
      }),
    ]);
    expect(racing.status).toBe(200);
    const get = async (uuid: string) =>
      (await gateway.call('GET', `/api/tickets/${uuid}`, { key })).body.data;
    const first = await get(made.tickets[0] as string);
    expect(first.subject).toBe('Escalated for [erased]');
    const second = await get(made.tickets[1] as string);
    expect(second.requester).toMatchObject({ email: null, erased: true });
    expect(['Callback [erased]', `Callback ${racer.last}`]).toContain(second.subject);
    // After the erasure passed the ticket: a PATCH naming the person is a new write, kept as written.
    const late = await gateway.call('PATCH', `/api/tickets/${made.tickets[0]}`, {
      key,
      body: { subject: `Follow-up for ${racer.first}` },
    });
    expect(late.body.ticket.subject).toBe(`Follow-up for ${racer.first}`);
    expect(late.body.ticket.requester).toMatchObject({ email: null, erased: true });
    // After it completed: a new ticket from the same address is a new write, kept (the person came back).
    const back = await gateway.call('POST', '/api/tickets', {
      key,
      body: { subject: 'Me again', description: 'Hi', requester_email: racer.email },
    });
    expect(back.status).toBe(201);
    expect(back.body.ticket.requester.email).toBe(racer.email);
  });
});
