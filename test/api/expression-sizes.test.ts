import { describe, expect, it } from 'vitest';
import { dynamo } from '#lib/data/client.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { ticketBody, ticketsThrough } from '#test/support/tickets.ts';

/**
 * No expression grows with the account (issue 27): DynamoDB refuses an expression over 4 KB, so one that names
 * every agent, stage or currency of the account (as least-busy's condition once did, a clause per candidate)
 * fails outright past some account size. Every store call the service sends is recorded here, and the largest
 * expression and the largest set of expression names and values of each kind of change are compared between a
 * small account and a large one (1,000 agents, 20 stages, deals in 5 currencies, some history). Ids grow by a
 * few digits between the two; nothing else may.
 */
const gateway = useGateway();
const tickets = ticketsThrough(gateway, ticketBody());

interface Sizes {
  expression: number;
  namesAndValues: number;
}

const EXPRESSIONS = [
  'UpdateExpression',
  'ConditionExpression',
  'KeyConditionExpression',
  'FilterExpression',
  'ProjectionExpression',
] as const;

let recording: Sizes | undefined;

function record(input: Record<string, unknown>): void {
  if (!recording) return;
  for (const name of EXPRESSIONS) {
    const expression = input[name];
    if (typeof expression === 'string') {
      recording.expression = Math.max(recording.expression, Buffer.byteLength(expression));
    }
  }
  const namesAndValues = JSON.stringify([
    input.ExpressionAttributeNames ?? {},
    input.ExpressionAttributeValues ?? {},
  ]);
  recording.namesAndValues = Math.max(recording.namesAndValues, Buffer.byteLength(namesAndValues));
}

dynamo.middlewareStack.add(
  (next) => async (args) => {
    const input = args.input as Record<string, unknown>;
    record(input);
    for (const action of (input.TransactItems as Record<string, Record<string, unknown>>[] | undefined) ??
      []) {
      for (const part of Object.values(action)) record(part);
    }
    return next(args);
  },
  { step: 'initialize', name: 'expressionSizes', priority: 'low' },
);

async function sizesOf(work: () => Promise<unknown>): Promise<Sizes> {
  recording = { expression: 0, namesAndValues: 0 };
  try {
    await work();
    return recording;
  } finally {
    recording = undefined;
  }
}

const stageNames = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: `Stage ${i + 1}`,
    color: '#336699',
    probability: (i * 5) % 100,
  }));
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF'];

/** An account of the given size, with some history on every agent, stage and currency it has. */
async function accountOf(size: { agents: number; stages: number; currencies: number }) {
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
  for (const [s] of stages.entries()) {
    await Promise.all(
      CURRENCIES.slice(0, size.currencies).map(async (currency) => {
        const response = await deal(s, currency);
        expect(response.status, response.text).toBe(201);
      }),
    );
  }
  // 21: one each for 3 agents seven times, so the next pick is the first agent, not the last.
  for (let i = 0; i < 21; i++) await tickets.create(account.apiKey);
  return { account, stages, deal };
}

/** The largest expression and names-and-values of each kind of change, on one account. */
async function changeSizes(size: { agents: number; stages: number; currencies: number }) {
  const { account, stages, deal } = await accountOf(size);
  const key = account.apiKey;
  const last = account.agents.at(-1)?.id;
  let ticket: { reference: string; assignee: { id: number } } | undefined;
  let made: { body: { data: { uuid: string } } } | undefined;
  return {
    'ticket create (least-busy)': await sizesOf(async () => {
      ticket = await tickets.create(key);
      expect(ticket?.assignee.id).not.toBe(last);
    }),
    'ticket update (status, priority, assignee)': await sizesOf(() =>
      tickets.update(key, ticket?.reference ?? '', {
        status: 'pending',
        priority: 'urgent',
        assignee_id: last,
      }),
    ),
    'ticket list (status and assignee)': await sizesOf(() =>
      tickets.list(key, `status=pending&assignee_id=${last}`),
    ),
    'deal create (last stage, last currency)': await sizesOf(async () => {
      made = await deal(stages.length - 1, CURRENCIES[size.currencies - 1] ?? 'EUR');
    }),
    'deal update (stage and amount)': await sizesOf(async () => {
      const response = await gateway.call('PATCH', `/api/deals/${made?.body.data.uuid}`, {
        key,
        body: { stage_id: stages[0]?.id, amount: '99.99' },
      });
      expect(response.status, response.text).toBe(200);
    }),
    'pipeline board': await sizesOf(async () => {
      const response = await gateway.call('GET', `/api/pipelines/${account.pipelines[0]?.id}/board`, { key });
      expect(response.status, response.text).toBe(200);
    }),
  };
}

describe('no expression grows with the account', () => {
  it('the largest expression of each change is the same at 3 agents, 2 stages and 1 currency as at 1,000 agents, 20 stages and 5 currencies', async () => {
    const small = await changeSizes({ agents: 3, stages: 2, currencies: 1 });
    const large = await changeSizes({ agents: 1000, stages: 20, currencies: 5 });
    for (const [change, sizes] of Object.entries(large)) {
      const base = small[change as keyof typeof small];
      expect(base.expression, change).toBeGreaterThan(0);
      // Ids of 4 digits instead of 1 in a few names and values; a clause per agent, stage or currency is far more.
      expect(sizes.expression, `${change}: expression`).toBeLessThanOrEqual(base.expression + 16);
      expect(sizes.namesAndValues, `${change}: names and values`).toBeLessThanOrEqual(
        base.namesAndValues + 48,
      );
      expect(sizes.expression, change).toBeLessThan(4096);
    }
  }, 120_000);
});
