import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AccountConfig } from '#lib/accounts/types.ts';
import { IndexTotals } from '#lib/data/index/totals.ts';
import { accountKeys } from '#lib/data/keys.ts';
import { batchPutAll, dynamo, tableName } from '#lib/data/store/client.ts';
import { chunks, keyString } from '#lib/data/store/items.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { composeTicket } from '#lib/tickets/compose-ticket.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp } from '#lib/time.ts';

/**
 * Bulk path for the scaling runs: builds every ticket with the create path's own pure functions
 * (composeTicket, and the ticket index's items) and writes exactly those items with BatchWriteItem; the counters
 * the transaction would have incremented are summed here and written as their final values, and so are the
 * blocks' packed keys.
 */
const WORDS = [
  'invoice',
  'login',
  'refund',
  'portal',
  'billing',
  'password',
  'export',
  'report',
  'upgrade',
  'sync',
];
export const SEED = {
  /** A selective search word: in tickets 1 to 5 only, whatever the account's size. */
  rareWord: 'zebra',
  /** 500 requesters (an e-mail filter matches N/500 tickets); tickets 1 to 3 have a requester of their own. */
  email: (i: number) => (i <= 3 ? 'founder@acme-rare.test' : `user${i % 500}@example${i % 20}.test`),
  /** gold on a third of tickets: with priority=high, the broad two-filter shape of the bench. */
  plan: (i: number) => (i % 3 === 0 ? 'gold' : 'silver'),
  /** A second custom field, on every ticket (half a, half b): two custom-field filters together. */
  tier: (i: number) => (i % 2 === 0 ? 'a' : 'b'),
  /**
   * Where updates have left the ticket: 40% open, 20% pending, 10% in progress, 20% resolved, 10% closed. The
   * seed writes each ticket's final state, indexed exactly as a create and its updates leave it (the model test
   * proves updates keep every index exact).
   */
  status: (i: number) =>
    (
      [
        'open',
        'open',
        'open',
        'open',
        'pending',
        'in_progress',
        'resolved',
        'resolved',
        'closed',
        'pending',
      ] as const
    )[i % 10] as 'open' | 'pending' | 'in_progress' | 'resolved' | 'closed',
  priority: (i: number) =>
    (['low', 'medium', 'high', 'urgent'] as const)[i % 4] as 'low' | 'medium' | 'high' | 'urgent',
};

/** Ticket i's fields as POST /api/tickets takes them (the people bench creates its tickets so, with a priority). */
export const seedFields = (i: number) => ({
  subject: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]}${i <= 5 ? ` ${SEED.rareWord}` : ''}`,
  description: 'Seeded for the benchmark.',
  requester_email: SEED.email(i),
  custom_fields: { plan: SEED.plan(i), tier: SEED.tier(i) },
});

export class TicketSeeder {
  private seeded = 0;
  /** Counters, blocks and stats of every ticket so far, and the blocks this call touched (written whole). */
  private readonly totals: IndexTotals<Ticket>;
  private readonly touchedBlocks = new Set<string>();
  private readonly startUs = Date.parse('2026-01-01T00:00:00Z') * 1000;

  constructor(
    private readonly accountId: string,
    private readonly config: AccountConfig,
  ) {
    this.totals = new IndexTotals(tickets.index, accountId);
  }

  get count(): number {
    return this.seeded;
  }

  /** Seeds tickets until the account holds `total`; returns the seconds it took. */
  async seedTo(total: number): Promise<number> {
    const started = performance.now();
    const queue: Record<string, unknown>[] = [];
    const writers: Promise<void>[] = [];
    const flush = async () => {
      while (queue.length >= 25) {
        const batch = queue.splice(0, 25);
        writers.push(batchPutAll(batch));
        if (writers.length >= 16) await Promise.all(writers.splice(0));
      }
    };
    const agents = this.config.agents.filter((a) => a.active);
    while (this.seeded < total) {
      const number = ++this.seeded;
      const createdUs = this.startUs + number * 1000;
      const i = number;
      const ticket = composeTicket({
        account: this.config.account,
        input: seedFields(i),
        number,
        createdUs,
        priority: SEED.priority(i),
        category: undefined,
        team: null,
        assignee: agents[i % agents.length],
        contact: undefined,
      });
      const status = SEED.status(i);
      const at = formatTimestamp(createdUs + 3_600_000_000); // an hour after the ticket was created
      ticket.status = status;
      if (status !== 'open') ticket.updatedAt = at;
      if (status === 'resolved' || status === 'closed') ticket.resolvedAt = at;
      if (status === 'closed') ticket.closedAt = at;
      const items = tickets.items(this.accountId, ticket);
      queue.push(items.entity, ...items.boundedPostings, ...(items.numberTerm ? [items.numberTerm] : []));
      queue.push(...items.prefixTerms, ...items.sortedPostings);
      queue.push(...items.unbounded.map((u) => u.posting));
      this.totals.add(items);
      for (const b of items.blocks) this.touchedBlocks.add(keyString(b.key));
      await flush();
    }
    if (queue.length > 0) writers.push(batchPutAll(queue.splice(0)));
    await Promise.all(writers);
    await this.writeCounters();
    return (performance.now() - started) / 1000;
  }

  private async writeCounters(): Promise<void> {
    const items: Record<string, unknown>[] = [
      ...this.totals.statsItems(),
      ...this.totals.counterItems(),
      ...this.totals.blockItems(this.touchedBlocks),
    ];
    this.touchedBlocks.clear();
    // 16 batches at a time: the blocks alone are some hundred thousand items at 100,000 tickets.
    const batches = chunks(items, 25);
    const writer = async () => {
      for (let batch = batches.shift(); batch; batch = batches.shift()) await batchPutAll(batch);
    };
    await Promise.all(Array.from({ length: 16 }, writer));
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.sequences(this.accountId),
        UpdateExpression: 'SET ticket = :n',
        ExpressionAttributeValues: { ':n': this.seeded },
      }),
    );
  }
}
