import { afterEach, describe, expect, it } from 'vitest';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { clearHolds, commitOf, failNext, hold, listAll, pendingItems } from '#test/support/pending-holds.ts';

/**
 * (1) a create whose requester lookup (read beside its number and pending item) fails: its pending
 * item, which no write will use, must not be left (sequences.ts says a failed reservation drops it); (2) a reindex
 * of the account run while a create is held between its marked puts and its commit (docs: the reindex wants no
 * writes meanwhile; before pending ids, every create's terms and postings were in its commit, so only the largest
 * creates could meet a sweep with their items and without their ticket).
 */
const gateway = useGateway();
afterEach(clearHolds);

const contactLookup = (input: Record<string, unknown>) => {
  const s = JSON.stringify(input.Key ?? {});
  return s.includes('CONTACT#') && s.includes('"CONTACT"');
};

describe('pending items and what fails around them', () => {
  const account = useTestAccount();
  const call = () => keyedCaller(gateway, account.apiKey);

  it("a create whose requester's contact lookup fails leaves no pending item", async () => {
    const before = (await pendingItems(account.accountId)).length;
    failNext('GetItemCommand', contactLookup, 'throttle');
    const r = await call()('POST', '/api/tickets', {
      subject: 'lookup fails',
      description: 'd',
      requester_email: 'lookup@fails.test',
    });
    expect(r.status, r.text).toBeGreaterThanOrEqual(500);
    expect((await pendingItems(account.accountId)).length - before).toBe(0);
  });

  it('a reindex while a create is held before its commit: the ticket GET finds is found by every read', async () => {
    const seed = await call()('POST', '/api/tickets', {
      subject: 'cassowary seen',
      description: 'd',
      requester_email: 'bird@cassowary.test',
      custom_fields: { zone: 'cassowary' },
    });
    expect(seed.status).toBe(201);
    const held = hold('TransactWriteItemsCommand', commitOf('held-c'));
    const post = call()('POST', '/api/tickets', {
      subject: 'cassowary seen',
      description: 'd',
      requester_email: 'bird@cassowary.test',
      custom_fields: { zone: 'cassowary', who: 'held-c' },
    });
    await held.reached;
    await tickets.rebuild(account.accountId);
    held.release('pass');
    const r = await post;
    expect(r.status, r.text).toBe(201);
    const both = [seed.body.ticket.uuid, r.body.ticket.uuid].sort();
    expect((await call()('GET', `/api/tickets/${r.body.ticket.uuid}`)).status).toBe(200);
    const seen: Record<string, unknown> = {};
    for (const q of [
      'search=cassowary',
      'custom_fields[zone]=cassowary',
      'requester_email=bird@cassowary.test',
      `search=${Number(r.body.ticket.reference.replace(/\D/g, ''))}`,
    ]) {
      const got = await listAll(call(), q);
      seen[q] = { total: got.total, listed: got.listed, found: got.uuids.includes(r.body.ticket.uuid) };
    }
    expect(seen).toEqual({
      'search=cassowary': { total: 2, listed: 2, found: true },
      'custom_fields[zone]=cassowary': { total: 2, listed: 2, found: true },
      'requester_email=bird@cassowary.test': { total: 2, listed: 2, found: true },
      [`search=${Number(r.body.ticket.reference.replace(/\D/g, ''))}`]: { total: 1, listed: 1, found: true },
    });
    expect(both).toHaveLength(2);
  });
});
