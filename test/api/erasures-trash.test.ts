import { describe, expect, it } from 'vitest';
import { getErasureProgress } from '#lib/data/erasures.ts';
import { getTrashed } from '#lib/data/trash/trash.ts';
import { erasureStep, runErasure } from '#lib/erasures/job.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { personNamed, type TestPerson } from '#test/support/erasures.ts';
import { useGateway } from '#test/support/http.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';

/**
 * An erasure and the trash racing it (decisions.md, "Erasing a person"): a restore landing while the job purges
 * the person's trashed ticket, or before the job reaches the trash; a contact deleted after the trash phase; a
 * deal trashed with its contact. Afterwards nothing live or in the trash holds the person (each read by GetItem
 * or the API on the objects this file made: no Scan).
 */
const gateway = useGateway();
const account = useTestAccount();

const call = (method: string, path: string, body?: unknown) =>
  gateway.call(method, path, { key: account.apiKey, ...(body === undefined ? {} : { body }) });

async function trashedTicketOf(p: TestPerson): Promise<string> {
  const made = await call('POST', '/api/tickets', {
    subject: `${p.first} twice`,
    description: `Sent twice by ${p.first} ${p.last}`,
    requester_email: p.email,
    requester_name: `${p.first} ${p.last}`,
  });
  expect(made.status, made.text).toBe(201);
  const uuid = made.body.ticket.uuid as string;
  expect((await call('DELETE', `/api/tickets/${uuid}`)).status).toBe(200);
  return uuid;
}

/** A deal of the person's, with their contact made by it: the deal's and the contact's uuids. */
async function dealOf(p: TestPerson, name: string): Promise<{ dealUuid: string; contactUuid: string }> {
  const deal = await call('POST', '/api/deals', {
    name,
    amount: '10.00',
    contact_email: p.email,
    contact_first_name: p.first,
    contact_last_name: p.last,
    contact_phone: p.phone,
  });
  expect(deal.status, deal.text).toBe(201);
  return { dealUuid: deal.body.data.uuid as string, contactUuid: deal.body.data.contact.uuid as string };
}

async function startErasure(p: TestPerson): Promise<string> {
  const started = await call('POST', '/api/erasures', { email: p.email });
  expect(started.status, started.text).toBe(202);
  return started.body.data.id as string;
}

/** The ticket holds nothing of the person: gone for good (404, not in the trash) or live with them erased. */
async function expectErased(uuid: string, p: TestPerson): Promise<void> {
  const got = await call('GET', `/api/tickets/${uuid}`);
  if (got.status === 200) {
    expect(got.body.data.requester).toMatchObject({ email: null, erased: true });
    for (const trace of [p.email, p.first, p.last]) expect(got.text).not.toContain(trace);
  } else expect(got.status).toBe(404);
  expect(await getTrashed(account.accountId, uuid)).toBeUndefined();
}

/** Steps the erasure until its progress is at `phase`. */
async function stepUntil(id: string, phase: string): Promise<void> {
  for (let steps = 0; (await getErasureProgress(account.accountId, id))?.phase !== phase; steps++) {
    expect(steps).toBeLessThan(100);
    expect(await erasureStep(account.accountId, id, { stepItems: 1 })).toBe('more');
  }
}

describe('an erasure racing the trash', () => {
  it('a restore landing while the job purges the trashed ticket answers 404; the ticket is purged', async () => {
    const p = personNamed('restore-purge', 'Clementine', 'Ashgrove', '');
    const uuid = await trashedTicketOf(p);
    const id = await startErasure(p);
    let restore: { status: number } | undefined;
    let listed: { purge_at: string } | undefined;
    // Just before the purge deletes the trash item (its last move): the restore, and the trash list.
    beforeCallOnce('DeleteItemCommand', uuid, async () => {
      restore = await call('POST', `/api/trash/${uuid}/restore`, {});
      const trash = await call('GET', '/api/trash?type=ticket&limit=100');
      listed = trash.body.data.find((t: { uuid: string }) => t.uuid === uuid);
    });
    await runErasure(account.accountId, id);
    expect(restore?.status).toBe(404);
    // The list says so too: its purge is due (no longer the 30 days the deletion gave it).
    expect(Date.parse(listed?.purge_at ?? '')).toBeLessThanOrEqual(Date.now());
    await expectErased(uuid, p);
  });

  it('a restore landing just before the job reads the trashed ticket: erased as a live ticket', async () => {
    const p = personNamed('restore-first', 'Evangeline', 'Moorcroft', '');
    const uuid = await trashedTicketOf(p);
    const id = await startErasure(p);
    await stepUntil(id, 'trash');
    let restore: { status: number } | undefined;
    beforeCallOnce('GetItemCommand', uuid, async () => {
      restore = await call('POST', `/api/trash/${uuid}/restore`, {});
    });
    await runErasure(account.accountId, id);
    expect(restore?.status).toBe(200);
    await expectErased(uuid, p);
    const done = await call('GET', `/api/erasures/${id}`);
    expect(done.body.data.status).toBe('completed');
  });

  it('a ticket restored after the job passed the tickets phase: the job goes back and erases it', async () => {
    const p = personNamed('restore-early', 'Rosalind', 'Fairweather', '');
    const uuid = await trashedTicketOf(p);
    const id = await startErasure(p);
    await stepUntil(id, 'deals');
    expect((await call('POST', `/api/trash/${uuid}/restore`, {})).status).toBe(200);
    await runErasure(account.accountId, id);
    await expectErased(uuid, p);
    // A ticket of the address created after the start and after the job passed: kept as written.
    const late = await call('POST', '/api/tickets', {
      subject: 'Back again',
      description: 'Hi',
      requester_email: p.email,
    });
    expect(late.body.ticket.requester.email).toBe(p.email);
  });

  it('a contact deleted after the trash phase passed is purged from the trash', async () => {
    const p = personNamed('contact-late', 'Seraphina', 'Holloway', '+44 20 7946 0777');
    const { dealUuid, contactUuid } = await dealOf(p, 'Renewal');
    // Its one deal in the trash: the contact can be deleted while the job runs.
    expect((await call('DELETE', `/api/deals/${dealUuid}`)).status).toBe(200);
    const id = await startErasure(p);
    await stepUntil(id, 'contact');
    expect((await call('DELETE', `/api/contacts/${contactUuid}`)).status).toBe(200);
    await runErasure(account.accountId, id);
    expect(await getTrashed(account.accountId, contactUuid)).toBeUndefined();
    expect(await getTrashed(account.accountId, dealUuid)).toBeUndefined();
    expect((await call('POST', `/api/trash/${contactUuid}/restore`, {})).status).toBe(404);
  });

  it('a deal in the trash with its contact (no live contact names it) is purged', async () => {
    const p = personNamed('deal-trashed', 'Leontyne', 'Ravenscroft', '+44 20 7946 0888');
    const { dealUuid, contactUuid } = await dealOf(p, `Renewal for ${p.last}`);
    expect((await call('DELETE', `/api/deals/${dealUuid}`)).status).toBe(200);
    expect((await call('DELETE', `/api/contacts/${contactUuid}`)).status).toBe(200);
    const id = await startErasure(p);
    await runErasure(account.accountId, id);
    expect(await getTrashed(account.accountId, contactUuid)).toBeUndefined();
    expect(await getTrashed(account.accountId, dealUuid)).toBeUndefined();
  });
});
