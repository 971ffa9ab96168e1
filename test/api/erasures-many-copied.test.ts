import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderMailStore } from '#infra/local/mail.ts';
import { messageKeys, personRefKeys } from '#lib/data/keys.ts';
import { folderMailEraser } from '#lib/data/mail-store.ts';
import { getItem, queryAll, tableName } from '#lib/data/store/client.ts';
import { type ReceivedMail, receiveMail } from '#lib/email/receive.ts';
import { addressHash, MAX_PERSON_REFS } from '#lib/erasures/address-hash.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { textsOf } from '#test/support/erasures.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { keepRaw } from '#test/support/kept-mail.ts';

/**
 * A mail that copies 30 people (decisions.md, "Erasing a person"): every address it keeps gets a person
 * reference, the first 10 in its commit, the rest right after it (docs/email.md, "Parties"), so erasing the 25th
 * finds the ticket and takes their address out of it. Before, only the first 10 got one: the erasure of the 25th
 * completed having found nothing, and their address stayed on the ticket. A crash between the commit and the
 * references after it is mended by the mail's processing again.
 */
const gateway = useGateway();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-many-copied-'));
  await mkdir(join(dir, 'raw'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

interface Scene {
  account: TestAccount;
  support: string;
  /** The 30 people copied, in the Cc's order. */
  copied: string[];
}

async function scene(): Promise<Scene> {
  const domain = `mc${randomBytes(4).toString('hex')}.test`;
  const support = `support@${domain}`;
  const account = await createTestAccount({ email: { addresses: [support] } });
  const copied = Array.from({ length: 30 }, (_, i) => `copied${String(i + 1).padStart(2, '0')}@${domain}.cc`);
  return { account, support, copied };
}

/** Rita's mail to the support address copying everyone, kept as the SMTP server keeps one. */
const ritasMail = (s: Scene): Promise<ReceivedMail> =>
  keepRaw(
    dir,
    [
      'From: Rita <rita@customer.test>',
      `To: ${s.support}`,
      `Cc: ${s.copied.join(', ')}`,
      'Subject: The printer is on fire',
      `Message-ID: <fire-${randomBytes(4).toString('hex')}@customer.test>`,
      '',
      'Copying the whole floor.',
      '',
    ].join('\r\n'),
    { mailFrom: 'rita@customer.test', address: s.support },
  );

/** Which of the copied people have a reference to the ticket (one GetItem each). */
async function referenced(s: Scene, ticketUuid: string): Promise<string[]> {
  const accountId = s.account.accountId;
  const found = await Promise.all(
    s.copied.map((a) => {
      const { pk, sk } = personRefKeys.ticket(accountId, addressHash(accountId, a), ticketUuid);
      return getItem({ pk, sk });
    }),
  );
  return s.copied.filter((_, i) => found[i] !== undefined);
}

/** Every text of the ticket: as the API answers it and its messages, and its stored message items. */
async function ticketTexts(s: Scene, ticketUuid: string): Promise<string> {
  const key = s.account.apiKey;
  const ticket = await gateway.call('GET', `/api/tickets/${ticketUuid}`, { key });
  const messages = await gateway.call('GET', `/api/tickets/${ticketUuid}/messages`, { key });
  expect(ticket.status, ticket.text).toBe(200);
  expect(messages.status, messages.text).toBe(200);
  const stored = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': messageKeys.partition(s.account.accountId, ticketUuid) },
  });
  return textsOf([ticket.body, messages.body, stored]).join('\n').toLowerCase();
}

async function erase(s: Scene, email: string) {
  const started = await gateway.call('POST', '/api/erasures', { key: s.account.apiKey, body: { email } });
  expect(started.status, started.text).toBe(202);
  await runErasure(s.account.accountId, started.body.data.id, { mail: folderMailEraser(dir) });
  const done = await gateway.call('GET', `/api/erasures/${started.body.data.id}`, { key: s.account.apiKey });
  expect(done.body.data.status).toBe('completed');
}

/** The 25th person erased: gone from the ticket, the 24th and the 26th still on it. */
async function expectTwentyFifthErased(s: Scene, ticketUuid: string) {
  const [twentyFourth, twentyFifth, twentySixth] = s.copied.slice(23, 26) as [string, string, string];
  expect(await ticketTexts(s, ticketUuid)).toContain(twentyFifth);
  await erase(s, twentyFifth);
  const after = await ticketTexts(s, ticketUuid);
  expect(after).not.toContain(twentyFifth);
  expect(after).toContain(twentyFourth);
  expect(after).toContain(twentySixth);
}

describe('a mail copying 30 people', () => {
  it('gives each of them a reference to its ticket, and erasing the 25th takes them out of it', async () => {
    const s = await scene();
    const [record] = await receiveMail(await ritasMail(s), folderMailStore(dir));
    expect(record?.outcome).toBe('new_ticket');
    const ticketUuid = record?.ticketUuid as string;
    expect(await referenced(s, ticketUuid)).toEqual(s.copied);
    await expectTwentyFifthErased(s, ticketUuid);
  });

  it('processed again after a crash between its commit and the references after it, writes the missing ones', async () => {
    const s = await scene();
    const mail = await ritasMail(s);
    const store = folderMailStore(dir);
    // The first reference written after the commit never reaches the store; the mail's processing stops there.
    await expect(
      withFault({ operation: 'UpdateItem', after: 'TransactWriteItems', mode: 'lost-request' }, () =>
        receiveMail(mail, store),
      ),
    ).rejects.toThrow();
    // Committed: the ticket and the commit's 10 references, not the 25th's (in the group after the failed one).
    const listed = await gateway.call('GET', '/api/tickets', { key: s.account.apiKey });
    expect(listed.body.data).toHaveLength(1);
    const crashed = await referenced(s, listed.body.data[0].uuid);
    expect(crashed.slice(0, MAX_PERSON_REFS)).toEqual(s.copied.slice(0, MAX_PERSON_REFS));
    expect(crashed).not.toContain(s.copied[24]);
    const [record] = await receiveMail(mail, store);
    expect(record).toMatchObject({ outcome: 'new_ticket', reason: 'processed_again' });
    const ticketUuid = record?.ticketUuid as string;
    expect(ticketUuid).toBe(listed.body.data[0].uuid);
    expect(await referenced(s, ticketUuid)).toEqual(s.copied);
    await expectTwentyFifthErased(s, ticketUuid);
  });
});
