import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { contacts } from '#lib/data/contacts/contact-index.ts';
import { keyedTerm } from '#lib/data/index/keyed.ts';
import { sampleRefusal } from '#lib/data/index/term-sample.ts';
import { orderKeys } from '#lib/data/keys.ts';
import { batchPutAll, dynamo } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { countRoundTrips } from '#test/support/round-trips.ts';

/**
 * The search word's probe of the terms' sample (lib/data/index/term-reads.ts, sampleRefuses), on the shapes a
 * search takes beside a plain word: a one-character word (16 shards), a bare number (a number range beside the
 * prefix range), two words, a deal word matched by its contacts' (searchRelated), sort=due; and the probe's own
 * failures: a store error on the probe alone is a clean 503 (as any store error), never a hang or a bare 500; a
 * probe slower than the reads still refuses (the answer is the data's, not the race's). A large account's sample is
 * stood in by copies put straight in the sample partition, as search-sample.test.ts does.
 */
const gateway = useGateway();
const PROBE = 'sampleProbeFault';
/** What the middleware does to the probe's Query (the one Query of a `_TERMS_SAMPLE#` partition). */
let probeFault: 'none' | 'fail' | 'slow' = 'none';

beforeAll(() => {
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
      const pk = String(input.ExpressionAttributeValues?.[':pk'] ?? '');
      if (context.commandName === 'QueryCommand' && pk.includes('_TERMS_SAMPLE#')) {
        if (probeFault === 'fail')
          throw Object.assign(new Error('socket hang up (injected)'), { code: 'ECONNRESET' });
        if (probeFault === 'slow') await new Promise((r) => setTimeout(r, 400));
      }
      return next(args);
    },
    // Inside the service's mapping of store errors (client.ts, storeUnavailable), as test/support/faults.ts.
    { step: 'initialize', name: PROBE, priority: 'low' },
  );
});
afterAll(() => {
  dynamo.middlewareStack.remove(PROBE);
});
afterEach(() => {
  delete process.env.LIST_READ_BUDGET;
  probeFault = 'none';
});

type Engine = typeof tickets | typeof contacts;

/** `count` copies of `word`'s term in the sample, of entities that are not there (numbers from `from`). */
async function fillSample(engine: Engine, accountId: string, word: string, count: number, from: number) {
  const keyed = keyedTerm(accountId, word);
  await batchPutAll(
    Array.from({ length: count }, (_, i) => ({
      ...engine.index.keys.sampleTerm(accountId, keyed, orderKeys.of(from + i, 100_000 + from + i)),
      type: `${engine.index.types.entity}_term`,
    })),
  );
}

describe('the probe on every shape of search', () => {
  let account: TestAccount;
  const list = (path: string, query: string) =>
    countRoundTrips(() => gateway.call('GET', `${path}?${query}`, { key: account.apiKey }));

  beforeAll(async () => {
    const stages = [{ name: 'Lead', color: '#000001', probability: 10 }];
    account = await createTestAccount({ pipelines: [{ name: 'Sales', default: true, stages }] });
    for (let i = 0; i < 6; i++) {
      const made = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: {
          subject: `Alpha bravo w${i} 7${i}`,
          description: 'd',
          requester_email: `r${i}@probe.test`,
        },
      });
      expect(made.status, made.text).toBe(201);
      const deal = await gateway.call('POST', '/api/deals', {
        key: account.apiKey,
        body: {
          name: `Deal n${i}`,
          amount: i,
          contact_email: `c${i}@probe.test`,
          contact_first_name: 'Cyrus',
        },
      });
      expect(deal.status, deal.text).toBe(201);
    }
  });

  it('a one-character word: refused from its sample whatever shard its terms are in', async () => {
    // One word of a ticket: its share is the budget; 111 sampled keys refuse it (sampleRefusal(2000)).
    process.env.LIST_READ_BUDGET = '2000';
    expect((await list('/api/tickets', 'search=a')).result.body.meta?.total).toBe(6);
    await fillSample(tickets, account.accountId, 'amber', sampleRefusal(2000), 1_000);
    for (const query of ['search=a', 'search=am', 'search=amber', 'search=a&sort=due']) {
      const refused = await list('/api/tickets', query);
      expect(refused.result.status, query).toBe(422);
      expect(Object.keys(refused.result.body.errors), query).toEqual(['search']);
      expect(refused.itemsRead, query).toBeLessThanOrEqual(2000);
    }
    // Two words share the budget: each a share of 1,000, too small to probe (111 copies are then the reads' to
    // judge: 6 keys); at 4,000 each has 2,000 and its probe again.
    expect((await list('/api/tickets', 'search=w1 a')).result.body.meta.total).toBe(1);
    process.env.LIST_READ_BUDGET = '4000';
    for (const query of ['search=w1 a', 'search=a w1&sort=due']) {
      const refused = await list('/api/tickets', query);
      expect(refused.result.status, query).toBe(422);
      expect(refused.itemsRead, query).toBeLessThanOrEqual(4000);
    }
    process.env.LIST_READ_BUDGET = '2000';
    // Words its copies do not start are untouched.
    expect((await list('/api/tickets', 'search=alpha')).result.body.meta.total).toBe(6);
    expect((await list('/api/tickets', 'search=b')).result.body.meta.total).toBe(6);
  });

  it('a bare number: its prefix range probed beside the number range', async () => {
    // A bare number's two ranges share the word's budget: 2,000 each of 4,000.
    process.env.LIST_READ_BUDGET = '4000';
    const before = await list('/api/tickets', 'search=7');
    expect(before.result.status, before.result.text).toBe(200);
    await fillSample(tickets, account.accountId, '79', sampleRefusal(2000) - 1, 2_000);
    const under = await list('/api/tickets', 'search=7');
    expect(under.result.status, under.result.text).toBe(200);
    expect(under.result.body.meta.total).toBe(before.result.body.meta.total);
    await fillSample(tickets, account.accountId, '78', 1, 3_000);
    const refused = await list('/api/tickets', 'search=7');
    expect(refused.result.status).toBe(422);
    expect(refused.itemsRead).toBeLessThanOrEqual(4000);
  });

  it("a deal word that its contacts' sample refuses (searchRelated), and one its own sample refuses", async () => {
    // A deal's word: its terms and its contacts' share its budget (intersection.ts, wordKeys): 2,000 each.
    process.env.LIST_READ_BUDGET = '4000';
    expect((await list('/api/deals', 'search=cyrus')).result.body.meta.total).toBe(6);
    await fillSample(contacts, account.accountId, 'cyrano', sampleRefusal(2000), 5_000);
    const byContacts = await list('/api/deals', 'search=cyr');
    expect(byContacts.result.status, byContacts.result.text).toBe(422);
    expect(Object.keys(byContacts.result.body.errors)).toEqual(['search']);
    // The contacts' own list gives the word the whole budget: 111 copies are below its refusal (170), its reads
    // decide; at 2,000 its probe refuses.
    expect((await list('/api/contacts', 'search=cyr')).result.body.meta.total).toBe(6);
    process.env.LIST_READ_BUDGET = '2000';
    expect((await list('/api/contacts', 'search=cyr')).result.status).toBe(422);
    process.env.LIST_READ_BUDGET = '4000';
    // The deals' own sample.
    const { deals } = await import('#lib/data/deals/deal-index.ts');
    await fillSample(deals as never, account.accountId, 'dealer', sampleRefusal(2000), 6_000);
    const byDeals = await list('/api/deals', 'search=deal');
    expect(byDeals.result.status, byDeals.result.text).toBe(422);
    expect(byDeals.itemsRead).toBeLessThanOrEqual(4000);
  });

  it('a probe slower than the reads still refuses, and still lets a word below the refusal be answered', async () => {
    process.env.LIST_READ_BUDGET = '2000';
    await fillSample(tickets, account.accountId, 'bravos', sampleRefusal(2000) - 1, 7_000);
    probeFault = 'slow';
    const under = await list('/api/tickets', 'search=bravo');
    expect(under.result.status, under.result.text).toBe(200);
    expect(under.result.body.meta.total).toBe(6);
    await fillSample(tickets, account.accountId, 'bravoz', 1, 8_000);
    const refused = await list('/api/tickets', 'search=bravo');
    expect(refused.result.status, refused.result.text).toBe(422);
  });

  it('a store error on the probe alone answers 503 with its body, as any store error does', async () => {
    process.env.LIST_READ_BUDGET = '2000';
    probeFault = 'fail';
    const failed = await list('/api/tickets', 'search=w2');
    expect(failed.result.status, failed.result.text).toBe(503);
    expect(failed.result.body.message).toEqual(expect.any(String));
    // Without the probe (the default budget's share is past it too: every search probes), the same word answers.
    probeFault = 'none';
    const answered = await list('/api/tickets', 'search=w2');
    expect(answered.result.status).toBe(200);
    expect(answered.result.body.meta.total).toBe(1);
  });
});
