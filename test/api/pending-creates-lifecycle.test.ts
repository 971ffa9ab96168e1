import { afterEach, describe, expect, it } from 'vitest';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import {
  agePendingItems,
  clearHolds,
  commitOf,
  failNext,
  hold,
  listAll,
  markedItems,
  pendingItems,
} from '#test/support/pending-holds.ts';

/**
 * Tickets whose terms and unbounded postings were put marked (before their commit) changed right
 * after: subject, custom field, organization moved, deleted, restored, changed again; a reindex run over marked
 * items (trusted ones, and those a timed-out or cancelled create left). Every read agrees with GET.
 */
const gateway = useGateway();
afterEach(clearHolds);

describe('marked items of a landed create, then its changes', () => {
  const account = useTestAccount();
  const call = () => keyedCaller(gateway, account.apiKey);

  async function only(query: string, uuids: string[]) {
    const got = await listAll(call(), query);
    expect({ query, ...got }).toEqual({
      query,
      total: uuids.length,
      uuids: [...uuids].sort(),
      listed: uuids.length,
    });
  }

  it('subject, custom field and organization changed, deleted, restored, changed back', async () => {
    const org = await call()('POST', '/api/organizations', {
      name: 'Marsupial Inc',
      domains: ['wombat.test'],
    });
    expect(org.status, org.text).toBe(201);
    const orgId = org.body.data.id as number;
    const r = await call()('POST', '/api/tickets', {
      subject: 'wombat burrow',
      description: 'd',
      requester_email: 'keeper@wombat.test',
      custom_fields: { zone: 'wombat' },
    });
    expect(r.status, r.text).toBe(201);
    const t = r.body.ticket as { uuid: string; reference: string; organization: { id: number } | null };
    expect(t.organization?.id).toBe(orgId);
    const number = Number(t.reference.replace(/\D/g, ''));
    // Its marked items are trusted now (its pending item is gone).
    expect(await pendingItems(account.accountId)).toEqual([]);
    expect((await markedItems(account.accountId)).length).toBeGreaterThan(3);

    await only('search=wombat', [t.uuid]);
    await only(`search=${number}`, [t.uuid]);
    await only('custom_fields[zone]=wombat', [t.uuid]);
    await only(`organization_id=${orgId}`, [t.uuid]);
    await only(`organization_id=${orgId}&custom_fields[zone]=wombat`, [t.uuid]);

    const p = await call()('PATCH', `/api/tickets/${t.uuid}`, {
      subject: 'koala tree',
      custom_fields: { zone: 'koala' },
      organization_id: null,
    });
    expect(p.status, p.text).toBe(200);
    await only('search=burrow', []);
    await only('search=koala', [t.uuid]);
    await only('search=wombat', [t.uuid]); // its requester's domain
    await only('custom_fields[zone]=wombat', []);
    await only('custom_fields[zone]=koala', [t.uuid]);
    await only(`organization_id=${orgId}`, []);
    await only('custom_fields[zone]=wombat&status=open', []);

    const d = await call()('DELETE', `/api/tickets/${t.uuid}`);
    expect(d.status, d.text).toBe(200);
    for (const q of [
      'search=koala',
      `search=${number}`,
      'custom_fields[zone]=koala',
      'requester_email=keeper@wombat.test',
    ])
      await only(q, []);
    const restored = await call()('POST', `/api/trash/${t.uuid}/restore`, {});
    expect(restored.status, restored.text).toBe(200);
    for (const q of [
      'search=koala',
      `search=${number}`,
      'custom_fields[zone]=koala',
      'requester_email=keeper@wombat.test',
    ])
      await only(q, [t.uuid]);
    const back = await call()('PATCH', `/api/tickets/${t.uuid}`, {
      subject: 'wombat burrow',
      custom_fields: { zone: 'wombat' },
      organization_id: orgId,
    });
    expect(back.status, back.text).toBe(200);
    await only('search=burrow', [t.uuid]);
    await only('search=koala', []);
    await only('custom_fields[zone]=wombat', [t.uuid]);
    await only('custom_fields[zone]=koala', []);
    await only(`organization_id=${orgId}`, [t.uuid]);
  });

  it("a reindex over marked items: trusted ones, a timed-out create's and a cancelled one's", async () => {
    const body = (who: string) => ({
      subject: `emu ${who}`,
      description: 'd',
      requester_email: `${who}@emu.test`,
      custom_fields: { zone: 'emu', who: `held-${who}` },
    });
    const landed = await call()('POST', '/api/tickets', body('landed'));
    expect(landed.status).toBe(201);
    failNext('TransactWriteItemsCommand', commitOf('held-lost'), 'timeout-unsent');
    const lost = await call()('POST', '/api/tickets', body('lost'));
    expect(lost.status).toBeGreaterThanOrEqual(500);
    failNext('TransactWriteItemsCommand', commitOf('held-again'), 'cancel');
    const again = await call()('POST', '/api/tickets', body('again'));
    expect(again.status, again.text).toBe(201);
    const want = [landed.body.ticket.uuid, again.body.ticket.uuid];
    const shapes = [
      'search=emu',
      'custom_fields[zone]=emu',
      'custom_fields[zone]=emu&status=open',
      'search=emu&custom_fields[zone]=emu',
    ];
    for (const q of shapes) await only(q, want);
    await only('requester_email=lost@emu.test', []);
    await only('custom_fields[who]=held-lost', []);

    // The timed-out create may still land, as far as a reindex knows: its items are kept (and still checked).
    expect((await tickets.rebuild(account.accountId)).removed).toBe(0);
    for (const q of shapes) await only(q, want);
    // Once its pending item is older than a create can run, the reindex deletes the items it meets.
    const pending = await pendingItems(account.accountId);
    expect(pending.length).toBeGreaterThan(0);
    await agePendingItems(account.accountId, 16 * 60 * 1000);
    const result = await tickets.rebuild(account.accountId);
    expect(result.removed).toBeGreaterThan(0); // the timed-out create's items
    for (const q of shapes) await only(q, want);
    await only('requester_email=lost@emu.test', []);
    await only('custom_fields[who]=held-lost', []);
    await only('requester_email=landed@emu.test', [landed.body.ticket.uuid]);
    await only('custom_fields[who]=held-again', [again.body.ticket.uuid]);
    // A second reindex finds nothing left to do.
    expect((await tickets.rebuild(account.accountId)).removed).toBe(0);
  });

  it('a create held before its commit while the ticket of the same values is deleted and restored', async () => {
    const first = await call()('POST', '/api/tickets', {
      subject: 'dugong seen',
      description: 'd',
      requester_email: 'sea@dugong.test',
      custom_fields: { zone: 'dugong' },
    });
    expect(first.status).toBe(201);
    const held = hold('TransactWriteItemsCommand', commitOf('held-second'));
    const post = call()('POST', '/api/tickets', {
      subject: 'dugong seen',
      description: 'd',
      requester_email: 'sea@dugong.test',
      custom_fields: { zone: 'dugong', who: 'held-second' },
    });
    await held.reached;
    expect((await call()('DELETE', `/api/tickets/${first.body.ticket.uuid}`)).status).toBe(200);
    await only('custom_fields[zone]=dugong', []);
    await only('search=dugong', []);
    expect((await call()('POST', `/api/trash/${first.body.ticket.uuid}/restore`, {})).status).toBe(200);
    await only('custom_fields[zone]=dugong', [first.body.ticket.uuid]);
    held.release('pass');
    const second = await post;
    expect(second.status, second.text).toBe(201);
    const both = [first.body.ticket.uuid, second.body.ticket.uuid];
    await only('custom_fields[zone]=dugong', both);
    await only('search=dugong', both);
    await only('requester_email=sea@dugong.test', both);
  });
});
