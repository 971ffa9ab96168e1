import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handler as listContacts } from '#functions/contacts-list.ts';
import { handler as createDeal } from '#functions/deals-create.ts';
import { handler as listDeals } from '#functions/deals-list.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { COUNTER_SHARDS } from '#lib/data/keys.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { countRoundTrips } from '#test/support/round-trips.ts';

/**
 * Bounded work per list (issue 27, docs/decisions.md "Bounded work per list"): with LIST_READ_BUDGET lowered to
 * a few keys, a search word that matches more and a page deeper than the budget answer 422 naming `search` or
 * `page`, and the request reads no more items than the budget; within it, every shape answers exactly as it
 * does under the default budget, in as many round trips.
 */
const SEARCH_MESSAGE =
  'The search matches too many entries to list: search for a longer or less common word.';
const PAGE_MESSAGE =
  'The page is too deep to list: ask for an earlier page, or narrow the list with a filter or a search.';

type Caller = ReturnType<typeof callerOf>;
type Handler = (event: ReturnType<typeof proxyEvent>, context: typeof lambdaContext) => Promise<unknown>;

function lister(handler: Handler, path: string, caller: Caller) {
  return async (query: Record<string, string>) => {
    const { result, roundTrips, itemsRead, countItemsRead } = await countRoundTrips(
      () =>
        handler(proxyEvent({ path, caller, query }), lambdaContext) as Promise<{
          statusCode: number;
          body: string;
        }>,
    );
    return {
      status: result.statusCode,
      body: JSON.parse(result.body),
      roundTrips,
      itemsRead,
      countItemsRead,
    };
  };
}

/** The request under a lowered budget, and the same request under the default one. */
async function underBudget<T>(budget: number, request: () => Promise<T>): Promise<{ lowered: T; usual: T }> {
  process.env.LIST_READ_BUDGET = String(budget);
  const lowered = await request();
  delete process.env.LIST_READ_BUDGET;
  return { lowered, usual: await request() };
}

afterEach(() => {
  delete process.env.LIST_READ_BUDGET;
});

describe('ticket lists within a read budget of 10 keys', () => {
  const BUDGET = 10;
  let list: ReturnType<typeof lister>;

  beforeAll(async () => {
    const account = await createTestAccount({});
    const caller = callerOf(account);
    for (let i = 0; i < 12; i++) {
      const priority = i < 9 ? 'high' : 'low';
      const body = {
        subject: `Alpha w${i}`,
        description: 'd',
        requester_email: `r${i}@budget.test`,
        priority,
      };
      const created = await createTicket(
        proxyEvent({ method: 'POST', path: '/api/tickets', caller, body }),
        lambdaContext,
      );
      expect(created.statusCode).toBe(201);
    }
    list = lister(listTickets, '/api/tickets', caller);
    await list({}); // warms the account's settings, so the figures below are the list's own reads
  });

  it('a search word matching 12 tickets is a 422 naming search, after reading at most the budget', async () => {
    const { lowered, usual } = await underBudget(BUDGET, () => list({ search: 'alpha' }));
    expect(lowered.status).toBe(422);
    expect(lowered.body).toEqual({ message: SEARCH_MESSAGE, errors: { search: [SEARCH_MESSAGE] } });
    expect(lowered.itemsRead).toBeLessThanOrEqual(BUDGET);
    expect(usual.status).toBe(200);
    expect(usual.body.meta.total).toBe(12);
  });

  it('a page whose keys pass the budget is a 422 naming page, reading only the counter', async () => {
    const { lowered, usual } = await underBudget(BUDGET, () => list({ page: '3', per_page: '5' }));
    expect(lowered.status).toBe(422);
    expect(lowered.body).toEqual({ message: PAGE_MESSAGE, errors: { page: [PAGE_MESSAGE] } });
    // The counter alone: its shards (one Query of at most COUNTER_SHARDS small items), nothing else.
    expect(lowered.itemsRead).toBe(lowered.countItemsRead);
    expect(lowered.countItemsRead).toBeGreaterThan(0);
    expect(lowered.countItemsRead).toBeLessThanOrEqual(COUNTER_SHARDS);
    expect(usual.status).toBe(200);
    expect(usual.body.data).toHaveLength(2);
  });

  it.each([
    ['a word within the budget', { search: 'w3' }],
    ['a page within the budget', { page: '2', per_page: '5' }],
    ['the first page', {}],
    ['a page past the end', { page: '4', per_page: '5' }],
    ['a page of a filter past the end', { priority: 'low', page: '3', per_page: '5' }],
  ])('%s answers as under the default budget, in as many round trips, reading no more', async (_, query) => {
    const { lowered, usual } = await underBudget(BUDGET, () => list(query));
    expect(lowered.status).toBe(200);
    expect(lowered.body).toEqual(usual.body);
    expect(lowered.roundTrips).toBe(usual.roundTrips);
    expect(lowered.itemsRead).toBeLessThanOrEqual(usual.itemsRead);
  });

  it('a deep page of a filter holding fewer entries than the budget is served: its counter first, then its keys', async () => {
    // 9 high tickets, page 3 of 4: 12 keys asked, more than the budget, but only the 9 there are can be read.
    const { lowered, usual } = await underBudget(BUDGET, () =>
      list({ priority: 'high', page: '3', per_page: '4' }),
    );
    expect(lowered.status).toBe(200);
    expect(lowered.body).toEqual(usual.body);
    expect(lowered.body.data).toHaveLength(1);
    expect(lowered.roundTrips).toBe(usual.roundTrips + 1);
  });
});

describe('deal and contact search within a read budget of 4 keys (the shared engine)', () => {
  const BUDGET = 4;
  let deals: ReturnType<typeof lister>;
  let contacts: ReturnType<typeof lister>;

  beforeAll(async () => {
    const stages = [{ name: 'Lead', color: '#000001', probability: 10 }];
    const account = await createTestAccount({ pipelines: [{ name: 'Sales', default: true, stages }] });
    const caller = callerOf(account);
    for (let i = 0; i < 6; i++) {
      const body = {
        name: `Deal w${i}`,
        amount: i,
        contact_email: `c${i}@rt.test`,
        contact_first_name: 'Cy',
      };
      const created = await createDeal(
        proxyEvent({ method: 'POST', path: '/api/deals', caller, body }),
        lambdaContext,
      );
      expect(created.statusCode).toBe(201);
    }
    deals = lister(listDeals, '/api/deals', caller);
    contacts = lister(listContacts, '/api/contacts', caller);
    await deals({});
  });

  it.each([
    ['a word of 6 deal names', 'deal'],
    ["a word of 6 deals' contacts", 'cy'],
  ])('deals: %s is a 422 naming search, after reading at most the budget', async (_, search) => {
    const { lowered, usual } = await underBudget(BUDGET, () => deals({ search }));
    expect(lowered.status).toBe(422);
    expect(lowered.body).toEqual({ message: SEARCH_MESSAGE, errors: { search: [SEARCH_MESSAGE] } });
    expect(lowered.itemsRead).toBeLessThanOrEqual(BUDGET);
    expect(usual.body.meta.total).toBe(6);
  });

  it('contacts: a word of 6 contacts is a 422 naming search, after reading at most the budget', async () => {
    const { lowered, usual } = await underBudget(BUDGET, () => contacts({ search: 'rt.test' }));
    expect(lowered.status).toBe(422);
    expect(lowered.body).toEqual({ message: SEARCH_MESSAGE, errors: { search: [SEARCH_MESSAGE] } });
    expect(lowered.itemsRead).toBeLessThanOrEqual(BUDGET);
    expect(usual.body.meta.total).toBe(6);
  });

  it('a word within the budget answers deals and contacts as under the default budget', async () => {
    for (const [list, search] of [
      [deals, 'w2'],
      [contacts, 'c2@rt.test'],
    ] as const) {
      const { lowered, usual } = await underBudget(BUDGET, () => list({ search }));
      expect(lowered.status).toBe(200);
      expect(lowered.body).toEqual(usual.body);
      expect(lowered.body.meta.total).toBe(1);
      expect(lowered.roundTrips).toBe(usual.roundTrips);
    }
  });
});

describe('several filters together within a read budget of 10 keys', () => {
  const BUDGET = 10;
  const FILTERS_MESSAGE =
    'The filters together match too many entries to list: add a filter that matches fewer entries, or a search.';
  let list: ReturnType<typeof lister>;

  beforeAll(async () => {
    const account = await createTestAccount({});
    const caller = callerOf(account);
    // high: 0–8, low: 9–11; plan gold: 0–7, silver: 8–11 (priority and a custom field: not a queue).
    for (let i = 0; i < 12; i++) {
      const body = {
        subject: `Beta w${i}`,
        description: 'd',
        requester_email: `f${i}@budget.test`,
        priority: i < 9 ? 'high' : 'low',
        custom_fields: { plan: i < 8 ? 'gold' : 'silver' },
      };
      const created = await createTicket(
        proxyEvent({ method: 'POST', path: '/api/tickets', caller, body }),
        lambdaContext,
      );
      expect(created.statusCode).toBe(201);
    }
    list = lister(listTickets, '/api/tickets', caller);
    await list({});
  });

  it('two filters whose keys together pass the budget (8 + 9, or 8 by key) are a 422 naming filters, reading only the counters', async () => {
    const { lowered, usual } = await underBudget(BUDGET, () =>
      list({ priority: 'high', 'custom_fields[plan]': 'gold' }),
    );
    expect(lowered.status).toBe(422);
    expect(lowered.body).toEqual({ message: FILTERS_MESSAGE, errors: { filters: [FILTERS_MESSAGE] } });
    // One round trip: the counts cell (the priority's count) and the custom field's counter, no block and no
    // posting. Each is sharded: the shards of the two (one Query each, at most COUNTER_SHARDS small items).
    expect(lowered.roundTrips).toBe(1);
    expect(lowered.itemsRead).toBe(lowered.countItemsRead);
    expect(lowered.countItemsRead).toBeGreaterThanOrEqual(2);
    expect(lowered.countItemsRead).toBeLessThanOrEqual(2 * COUNTER_SHARDS);
    expect(usual.status).toBe(200);
    expect(usual.body.meta.total).toBe(8);
  });

  it('filters whose blocks together pass the budget but whose candidates do not are served by key: one more round trip', async () => {
    // silver (4) drives; high's 9 keys would pass the budget read whole, its postings of the 4 candidates do not.
    const { lowered, usual } = await underBudget(BUDGET, () =>
      list({ priority: 'high', 'custom_fields[plan]': 'silver' }),
    );
    expect(lowered.status).toBe(200);
    expect(lowered.body).toEqual(usual.body);
    expect(lowered.body.meta.total).toBe(1);
    expect(lowered.roundTrips).toBe(usual.roundTrips + 1);
  });

  it('filters within the budget answer as under the default budget, in as many round trips', async () => {
    const { lowered, usual } = await underBudget(BUDGET, () =>
      list({ priority: 'low', 'custom_fields[plan]': 'silver' }),
    );
    expect(lowered.status).toBe(200);
    expect(lowered.body).toEqual(usual.body);
    expect(lowered.body.meta.total).toBe(3);
    expect(lowered.roundTrips).toBe(usual.roundTrips);
    expect(lowered.itemsRead).toBe(usual.itemsRead);
  });
});
