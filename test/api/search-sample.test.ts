import { afterEach, describe, expect, it } from 'vitest';
import { keyedTerm } from '#lib/data/index/keyed.ts';
import { queryTerm } from '#lib/data/index/term-reads.ts';
import { sampleRefusal } from '#lib/data/index/term-sample.ts';
import { orderKeys } from '#lib/data/keys.ts';
import { batchPutAll } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { expectedSample, sampleOf } from '#test/support/index-snapshot.ts';
import { countRoundTrips } from '#test/support/round-trips.ts';

/**
 * The terms' sample (lib/data/index/term-sample.ts, issue 40): every write keeps it exactly what the live tickets'
 * terms give (one in 64 of them), and a search word is refused from it, reading its few sampled keys, not the word's
 * share of the read budget; a word the sample does not refuse is decided by its own reads, as before.
 */
const gateway = useGateway();
const WORDS = ['amber', 'basil', 'cedar', 'delta', 'ember', 'fjord', 'gamma', 'harbor', 'indigo', 'juniper'];

afterEach(() => {
  delete process.env.LIST_READ_BUDGET;
});

const sampleHeld = async (accountId: string) => (await sampleOf(tickets, accountId)).map((i) => i.sk);

describe('the terms sample', () => {
  it('follows creates, subject changes, deletions and restores, and the reindex keeps it', async () => {
    const account = await createTestAccount();
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key: account.apiKey, ...(body === undefined ? {} : { body }) });
    const uuids: string[] = [];
    for (let i = 0; i < 24; i++) {
      const subject = WORDS.map((w) => `${w}${i % 5}`).join(' ');
      const made = await call('POST', '/api/tickets', {
        subject,
        description: 'Please',
        requester_email: `r${i}@sample.test`,
      });
      expect(made.status, made.text).toBe(201);
      uuids.push(made.body.ticket.uuid);
    }
    const afterCreates = await sampleHeld(account.accountId);
    // Deterministic: the same numbers and words sample the same terms every run.
    expect(afterCreates.length).toBeGreaterThan(0);
    expect(afterCreates).toEqual(await expectedSample(tickets, account.accountId, uuids));

    for (const uuid of uuids.slice(0, 6)) {
      const changed = await call('PATCH', `/api/tickets/${uuid}`, { subject: `${WORDS.join(' ')} renamed` });
      expect(changed.status, changed.text).toBe(200);
    }
    for (const uuid of uuids.slice(6, 10))
      expect((await call('DELETE', `/api/tickets/${uuid}`)).status).toBe(200);
    expect((await call('POST', `/api/trash/${uuids[6]}/restore`)).status).toBe(200);
    const live = [...uuids.slice(0, 7), ...uuids.slice(10)];
    expect(await sampleHeld(account.accountId)).toEqual(
      await expectedSample(tickets, account.accountId, live),
    );
    expect(await sampleHeld(account.accountId)).not.toEqual(afterCreates);

    // A stale copy (a term no ticket has) is what the reindex's term sweep deletes; the rest it keeps.
    const stale = tickets.index.keys.sampleTerm(
      account.accountId,
      keyedTerm(account.accountId, 'stale'),
      orderKeys.of(1, 1),
    );
    await batchPutAll([{ ...stale, type: 'ticket_term' }]);
    await tickets.rebuild(account.accountId);
    expect(await sampleHeld(account.accountId)).toEqual(
      await expectedSample(tickets, account.accountId, live),
    );
  });

  it('refuses a word from its sampled keys, reading them and one page at most; below the refusal, its reads decide', async () => {
    const account = await createTestAccount();
    const call = (query: string) =>
      countRoundTrips(() => gateway.call('GET', `/api/tickets?${query}`, { key: account.apiKey }));
    for (let i = 0; i < 12; i++) {
      const made = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject: `Alpha w${i}`, description: 'd', requester_email: `r${i}@sample.test` },
      });
      expect(made.status, made.text).toBe(201);
    }
    // A budget of 4,000 keys: a ticket's word shares it with the dimensions it relates to (the requesters it names:
    // intersection.ts, wordKeys), 2,000 each; the probe takes 111 of its terms' (sampleRefusal), their reads the
    // rest. A sample as a large account's holds for a word of ~7,000 tickets: 111 copies of `alpha`'s term.
    process.env.LIST_READ_BUDGET = '2000';
    const refusal = sampleRefusal(2000);
    expect(refusal).toBe(111);
    const keyed = keyedTerm(account.accountId, 'alpha');
    // The copies of the 12 tickets' own `alpha` that are sampled (the same every run: numbers 1 to 12).
    const own = (await sampleHeld(account.accountId)).filter((sk) => sk.startsWith(`p#${keyed}#`)).length;
    const copies = Array.from({ length: refusal - own }, (_, i) => ({
      ...tickets.index.keys.sampleTerm(account.accountId, keyed, orderKeys.of(1_000 + i, 100_000 + i)),
      type: 'ticket_term',
    }));
    await batchPutAll(copies.slice(1));

    // One copy short of the refusal: the word's own reads decide, and find its 12 tickets.
    const under = await call('search=alpha');
    expect(under.result.status, under.result.text).toBe(200);
    expect(under.result.body.meta.total).toBe(12);
    // The probe's keys are told to its caller, which takes them out of what filters beside it may read
    // (intersection.ts): here all 110 of the word's sampled keys.
    const probed = { keys: 0 };
    const found = await queryTerm(tickets.index, account.accountId, 'alpha', 2000, undefined, probed);
    expect([found.size, probed.keys]).toEqual([12, refusal - 1]);

    await batchPutAll(copies.slice(0, 1));
    const refused = await call('search=alpha');
    expect(refused.result.status).toBe(422);
    expect(refused.result.body.errors.search).toHaveLength(1);
    // The sample's 111 keys, and at most what the word's first reads had in flight (its 12 keys here).
    expect(refused.itemsRead).toBeLessThanOrEqual(refusal + 12 + 16);
    expect(refused.roundTrips).toBeLessThanOrEqual(under.roundTrips);

    // Another word is not touched by alpha's sample.
    const other = await call('search=w3');
    expect(other.result.status).toBe(200);
    expect(other.result.body.meta.total).toBe(1);
  });
});
