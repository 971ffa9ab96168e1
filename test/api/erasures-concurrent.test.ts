import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore } from '#infra/local/mail.ts';
import { getErasureProgress, messageItems, objectRefs } from '#lib/data/erasures.ts';
import { personRefKeys } from '#lib/data/keys.ts';
import { dynamo, getItem } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { newInboundId, type ReceivedMail, receiveMail } from '#lib/email/receive.ts';
import { addressHash } from '#lib/erasures/address-hash.ts';
import { erasureStep, runErasure } from '#lib/erasures/job.ts';
import { formatTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { holding, itemTexts, personNamed, type TestPerson, tracesOf } from '#test/support/erasures.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Erasures racing each other and the person's mail (decisions.md, "Erasing a person"): two erasures of two people
 * on one thread, each rewrite of one landing between the other's read and write of the same item; a mail of the
 * person threading into a ticket after the job read its messages. Read by Query and GetItem of the ticket's own
 * partitions and references (no Scan).
 */
const gateway = useGateway();
let dir: string;
let account: TestAccount;
let support: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-concurrent-'));
  await mkdir(join(dir, 'raw'));
  support = `support@c${randomBytes(4).toString('hex')}.test`;
  account = await createTestAccount({ agents: agentsFile(1), email: { addresses: [support] } });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function receive(from: TestPerson, headers: string[], body: string) {
  const inboundId = newInboundId();
  const rawKey = `raw/${inboundId}.eml`;
  const all = [`From: "${from.first} ${from.last}" <${from.email}>`, `To: ${support}`, ...headers];
  await writeFile(join(dir, rawKey), `${all.join('\r\n')}\r\n\r\n${body}\r\n`);
  const mail: ReceivedMail = {
    inboundId,
    rawKey,
    receivedAt: formatTimestamp(Date.now() * 1000),
    mailFrom: from.email,
    recipients: [support],
  };
  const [record] = await receiveMail(mail, folderMailStore(dir));
  return record;
}

/**
 * A thread: `requester` opens a ticket by mail, `replier` answers on it, naming the requester (so an erasure of
 * either rewrites the reply: it is the replier's, in their own name, and names the requester). Answers the ticket
 * and the first id.
 */
async function thread(requester: TestPerson, replier: TestPerson) {
  const id = `t.${randomBytes(4).toString('hex')}@c.test`;
  const opened = await receive(
    requester,
    ['Subject: Printer jams', `Message-ID: <${id}>`],
    `It jams. ${requester.first} ${requester.last}, ${requester.phone}`,
  );
  expect(opened?.outcome).toBe('new_ticket');
  const replied = await receive(
    replier,
    ['Subject: Re: Printer jams', `Message-ID: <r.${id}>`, `In-Reply-To: <${id}>`],
    `Mine too, ${requester.first}. ${replier.first} ${replier.last}, ${replier.phone}`,
  );
  expect(replied).toMatchObject({ outcome: 'threaded', ticketUuid: opened?.ticketUuid });
  return { ticket: opened?.ticketUuid as string, id };
}

async function startErasure(p: TestPerson): Promise<string> {
  const started = await gateway.call('POST', '/api/erasures', {
    key: account.apiKey,
    body: { email: p.email },
  });
  expect(started.status, started.text).toBe(202);
  return started.body.data.id as string;
}

/** Every stored text of a ticket: its item, its messages, and every item holding a copy (events, log entries). */
async function ticketTexts(uuid: string) {
  const items: Record<string, unknown>[] = [];
  const stored = await tickets.getByUuid(account.accountId, uuid);
  if (stored) items.push(stored.entity as unknown as Record<string, unknown>);
  items.push(...(await messageItems(account.accountId, uuid, 0, 100)));
  for (const ref of await objectRefs(account.accountId, uuid, null, 100)) {
    const item = await getItem({ pk: ref.pk, sk: ref.sk });
    if (item) items.push(item);
  }
  // As stored, packed events read unpacked (lib/data/store/packed.ts).
  return itemTexts(items);
}

describe('erasures racing each other and the mail', () => {
  it('two erasures of two people on one thread, each rewrite of one between the other’s read and write: neither person is left', async () => {
    const alma = personNamed('race-a', 'Almadine', 'Oakenshaw', '+44 20 7946 0301');
    const bram = personNamed('race-b', 'Bramwell', 'Underhill', '+44 20 7946 0302');
    const { ticket } = await thread(alma, bram);
    expect(holding(await ticketTexts(ticket), tracesOf(bram)).length).toBeGreaterThan(2);
    const erasingBram = await startErasure(bram);
    const erasingAlma = await startErasure(alma);

    // Bram's erasure runs; before each of its item Puts (a rewrite of an item it read), Alma's erasure steps on
    // until it has written that same item (or is done): her rewrite lands between his read and his write.
    const who = new AsyncLocalStorage<'alma'>();
    const byAlma = new Set<string>();
    const hooked = new Set<string>();
    const raced: string[] = [];
    let almaDone = false;
    let chain: Promise<unknown> = Promise.resolve();
    const plain = (v: unknown) => (v && typeof v === 'object' && 'S' in v ? (v as { S: string }).S : v);
    const almaUntil = async (key: string) => {
      while (!byAlma.has(key) && !almaDone) {
        const outcome = await who.run('alma', () =>
          erasureStep(account.accountId, erasingAlma, { stepItems: 1 }),
        );
        almaDone = outcome !== 'more';
      }
      if (byAlma.has(key)) raced.push(key);
    };
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input?: { Item?: Record<string, unknown> } }).input;
        const item = input?.Item;
        if (context.commandName === 'PutItemCommand' && item) {
          const key = `${plain(item.pk)} ${plain(item.sk)}`;
          if (who.getStore() === 'alma') byAlma.add(key);
          else if (!String(plain(item.pk)).startsWith('ERASURES#') && !hooked.has(key)) {
            hooked.add(key);
            chain = chain.then(() => almaUntil(key));
            await chain;
          }
        }
        return next(args);
      },
      { step: 'initialize', name: 'erasureRace', priority: 'low' },
    );
    try {
      await runErasure(account.accountId, erasingBram, { stepItems: 1 });
    } finally {
      dynamo.middlewareStack.remove('erasureRace');
    }
    await runErasure(account.accountId, erasingAlma);
    // At least a message and an event were raced so (the rewrites that change something on both sides).
    expect(raced.some((k) => k.startsWith('TICKET_MESSAGES#'))).toBe(true);
    expect(raced.some((k) => k.startsWith('EVENTS#'))).toBe(true);
    const after = await ticketTexts(ticket);
    expect(holding(after, tracesOf(bram))).toEqual([]);
    expect(holding(after, tracesOf(alma))).toEqual([]);
  });

  it('a mail of the person landing after the job read the ticket’s messages keeps its reference: a later erasure finds it', async () => {
    const owner = personNamed('late-o', 'Octavia', 'Penhaligon', '+44 20 7946 0401');
    const late = personNamed('late-p', 'Percival', 'Wraxall', '+44 20 7946 0402');
    const { ticket, id } = await thread(owner, late);
    const erasing = await startErasure(late);
    for (let steps = 0; ; steps++) {
      expect(steps).toBeLessThan(100);
      const progress = await getErasureProgress(account.accountId, erasing);
      if (progress?.phase === 'mentions' && progress.object === ticket && progress.sub === 'refs') break;
      expect(await erasureStep(account.accountId, erasing, { stepItems: 1 })).toBe('more');
    }
    // The ticket's messages read and erased; its references not yet: the person writes again on the thread.
    const again = await receive(
      late,
      ['Subject: Re: Printer jams', `Message-ID: <again.${id}>`, `In-Reply-To: <${id}>`],
      `Still jams. ${late.first} ${late.last}`,
    );
    expect(again).toMatchObject({ outcome: 'threaded', ticketUuid: ticket });
    await runErasure(account.accountId, erasing);
    // Written after the job passed the ticket: kept as written, and its reference with it.
    const { pk, sk } = personRefKeys.ticket(
      account.accountId,
      addressHash(account.accountId, late.email),
      ticket,
    );
    const ref = { pk, sk };
    expect(await getItem(ref)).toBeDefined();
    // A later erasure of the same address finds that mail by it.
    await runErasure(account.accountId, await startErasure(late));
    expect(holding(await ticketTexts(ticket), tracesOf(late))).toEqual([]);
    expect(await getItem(ref)).toBeUndefined();
  });
});
