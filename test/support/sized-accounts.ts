import { expect } from 'vitest';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { TicketSeeder } from '../../bench/lib/seed.ts';
import { agentsFile, createTestAccount } from './accounts.ts';
import type { Gateway } from './http.ts';
import { ticketBody, ticketsThrough } from './tickets.ts';

/**
 * Accounts of two sizes with the same history, and the same changes made on each, for the tests that check that
 * nothing grows with the account (issue 27): a small one (3 agents, 2 stages, 1 currency) and a large one (1,000
 * agents, 20 stages, deals in 5 currencies). Both have 40 deals (over every stage and currency) and 1,000 tickets
 * (one for each of the large account's agents, seeded as the bench seeds them: bench/lib/seed.ts) before the changes are made, so what
 * differs between them is the account's size, not its history.
 */
export interface AccountSize {
  agents: number;
  stages: number;
  currencies: number;
}

export const SMALL: AccountSize = { agents: 3, stages: 2, currencies: 1 };
export const LARGE: AccountSize = { agents: 1000, stages: 20, currencies: 5 };

const DEALS = 40;
const TICKETS = 1000;
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF'];

const stageNames = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: `Stage ${i + 1}`,
    color: '#336699',
    probability: (i * 5) % 100,
  }));

async function accountOf(gateway: Gateway, size: AccountSize) {
  const tickets = ticketsThrough(gateway, ticketBody());
  const account = await createTestAccount({
    auto_assignment: { enabled: true, method: 'least_busy' },
    agents: agentsFile(size.agents),
    pipelines: [{ name: 'Sales', default: true, stages: stageNames(size.stages) }],
  });
  const stages = account.pipelines[0]?.stages ?? [];
  let n = 0;
  const deal = (stage: number, currency: string) =>
    gateway.call('POST', '/api/deals', {
      key: account.apiKey,
      body: {
        name: `Deal ${++n}`,
        contact_email: `buyer${n}@client.test`,
        contact_first_name: 'Buyer',
        amount: '1200.50',
        currency,
        stage_id: stages[stage]?.id,
      },
    });
  // Every stage and currency of the account in use; a few at a time (one account's deals meet on shared items).
  for (let i = 0; i < DEALS; i += 5) {
    await Promise.all(
      Array.from({ length: 5 }, async (_, j) => {
        const k = i + j;
        const response = await deal(k % size.stages, CURRENCIES[k % size.currencies] ?? 'EUR');
        expect(response.status, response.text).toBe(201);
      }),
    );
  }
  const config = await loadAccountConfig(account.accountId);
  if (!config) throw new Error('the account has no configuration');
  await new TicketSeeder(account.accountId, config).seedTo(TICKETS);
  return { account, stages, deal, tickets };
}

/**
 * Makes each kind of change once on a new account of `size`, each inside `measure`, and answers what `measure`
 * answered for each, by name.
 */
export async function changesOn<M>(
  gateway: Gateway,
  size: AccountSize,
  measure: (work: () => Promise<unknown>) => Promise<M>,
): Promise<Record<string, M>> {
  const { account, stages, deal, tickets } = await accountOf(gateway, size);
  const key = account.apiKey;
  const [first, last] = [account.agents[0]?.id, account.agents.at(-1)?.id];
  let ticket: { reference: string; assignee: { id: number } } | undefined;
  let made: { status: number; body: { data: { uuid: string } } } | undefined;
  return {
    'ticket create (least-busy)': await measure(async () => {
      ticket = await tickets.create(key);
    }),
    // To another agent than least-busy's pick, so both agents' counts move.
    'ticket update (status, priority, assignee)': await measure(() =>
      tickets.update(key, ticket?.reference ?? '', {
        status: 'pending',
        priority: 'urgent',
        assignee_id: ticket?.assignee.id === last ? first : last,
      }),
    ),
    'ticket list (status and assignee)': await measure(() =>
      tickets.list(key, `status=pending&assignee_id=${last}`),
    ),
    'deal create (last stage, last currency)': await measure(async () => {
      made = await deal(stages.length - 1, CURRENCIES[size.currencies - 1] ?? 'EUR');
      expect(made.status).toBe(201);
    }),
    'deal update (stage and amount)': await measure(async () => {
      const response = await gateway.call('PATCH', `/api/deals/${made?.body.data.uuid}`, {
        key,
        body: { stage_id: stages[0]?.id, amount: '99.99' },
      });
      expect(response.status, response.text).toBe(200);
    }),
    'pipeline board': await measure(async () => {
      const response = await gateway.call('GET', `/api/pipelines/${account.pipelines[0]?.id}/board`, { key });
      expect(response.status, response.text).toBe(200);
    }),
  };
}
