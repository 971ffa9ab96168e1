import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AccountConfig, Contact, Pipeline, Stage } from '#lib/accounts/types.ts';
import { contacts } from '#lib/data/contacts/contact-index.ts';
import { contactItem, newContactUuid } from '#lib/data/contacts/contacts.ts';
import { deals } from '#lib/data/deals/deal-index.ts';
import type { EntityItems } from '#lib/data/index/items.ts';
import { IndexTotals } from '#lib/data/index/totals.ts';
import { accountKeys } from '#lib/data/keys.ts';
import { batchPutAll, dynamo, tableName } from '#lib/data/store/client.ts';
import { chunks, keyString } from '#lib/data/store/items.ts';
import { composeDeal } from '#lib/deals/create-deal.ts';
import type { Deal, DealStatus } from '#lib/deals/types.ts';
import { applyDealChange } from '#lib/deals/update-deal.ts';
import { formatTimestamp } from '#lib/time.ts';

/**
 * Bulk path for the deal scaling runs, as TicketSeeder is for tickets: contacts and deals built from the
 * domain's own pieces (the create's `composeDeal`, and `applyDealChange` for won and lost
 * deals) and written as exactly the items the engine writes (`contacts.items` and the e-mail item
 * `contactItem`; `deals.items`). Counters, blocks and the stats item (with the board's exact sums) are summed by
 * IndexTotals and written as their final values.
 */
const FIRST_NAMES = ['Ada', 'Bruno', 'Chloe', 'Dmitri', 'Elena', 'Farid', 'Greta', 'Hugo', 'Ines', 'Jonas'];
const LAST_NAMES = [
  'Moreau',
  'Schmidt',
  'Rossi',
  'Novak',
  'Silva',
  'Jensen',
  'Kowalski',
  'Dubois',
  'Lindqvist',
  'Ferreira',
];
const DEAL_WORDS = [
  'renewal',
  'licence',
  'upgrade',
  'onboarding',
  'support',
  'training',
  'migration',
  'audit',
];
const CURRENCIES = ['EUR', 'USD', 'GBP'] as const;

export const DEAL_SEED = {
  contacts: 2_000,
  /** A selective search word: in deals 1 to 5 only, whatever the account's size. */
  rareWord: 'quokka',
  /**
   * The key account: contact 1 holds every 50th deal (2 %), so its e-mail filter and its name's search fill a
   * page at every size (20 deals at 1k); its last name is its own word.
   */
  keyContact: { id: 1, email: 'buyer@key-account.test', firstName: 'Zora', lastName: 'Quillfeather' },
  contactOf: (i: number) => (i % 50 === 0 ? 1 : 2 + (i % (2_000 - 1))),
  /** 60 % open, 25 % won, 15 % lost. */
  status: (i: number): DealStatus => (i % 20 < 12 ? 'open' : i % 20 < 17 ? 'won' : 'lost'),
  currency: (i: number) => CURRENCIES[i % CURRENCIES.length] as string,
  /** Amounts with cents (the board's sums are exact decimals). */
  amount: (i: number) => ((i * 7_919) % 5_000_000) / 100,
  contactEmail: (id: number) => (id === 1 ? 'buyer@key-account.test' : `contact${id}@client${id % 20}.test`),
};

export class DealSeeder {
  private seeded = 0;
  private contactsWritten = false;
  private readonly contactList: Contact[] = [];
  private readonly totals: IndexTotals<Deal>;
  private readonly touchedBlocks = new Set<string>();
  /** Stages of every active pipeline, in turn: deal i sits in stage i mod their count. */
  private readonly places: { pipeline: Pipeline; stage: Stage }[];
  private readonly startUs = Date.parse('2026-02-01T00:00:00Z') * 1000;

  constructor(
    private readonly accountId: string,
    private readonly config: AccountConfig,
  ) {
    this.totals = new IndexTotals(deals.index, accountId);
    this.places = config.pipelines
      .filter((p) => p.active)
      .flatMap((pipeline) =>
        [...pipeline.stages].sort((a, b) => a.position - b.position).map((stage) => ({ pipeline, stage })),
      );
    const created = formatTimestamp(this.startUs);
    for (let id = 1; id <= DEAL_SEED.contacts; id++) {
      const key = id === DEAL_SEED.keyContact.id ? DEAL_SEED.keyContact : undefined;
      this.contactList.push({
        id,
        uuid: newContactUuid(id),
        email: DEAL_SEED.contactEmail(id),
        firstName: key?.firstName ?? (FIRST_NAMES[id % FIRST_NAMES.length] as string),
        lastName: key?.lastName ?? (LAST_NAMES[Math.floor(id / 10) % LAST_NAMES.length] as string),
        phone: null,
        createdAt: created,
        updatedAt: created,
      });
    }
  }

  get count(): number {
    return this.seeded;
  }

  contact(id: number): Contact {
    const contact = this.contactList[id - 1];
    if (!contact) throw new Error(`no seeded contact ${id}`);
    return contact;
  }

  /** The seeded stages, each with its pipeline. */
  get stages(): { pipeline: Pipeline; stage: Stage }[] {
    return this.places;
  }

  /** Seeds deals until the account holds `total` (the contacts on the first call); returns the seconds it took. */
  async seedTo(total: number): Promise<number> {
    const started = performance.now();
    const writer = new BulkWriter();
    if (!this.contactsWritten) {
      const contactTotals = new IndexTotals(contacts.index, this.accountId);
      for (const contact of this.contactList) {
        const items = contacts.items(this.accountId, contact);
        await writer.put(entityItemsToPut(items), contactItem(this.accountId, contact));
        contactTotals.add(items);
      }
      await writer.drain();
      await writer.putAll([
        ...contactTotals.statsItems(),
        ...contactTotals.counterItems(),
        ...contactTotals.blockItems(),
      ]);
      this.contactsWritten = true;
    }
    while (this.seeded < total) {
      const number = ++this.seeded;
      const deal = this.dealOf(number);
      const items = deals.items(this.accountId, deal);
      await writer.put(entityItemsToPut(items));
      this.totals.add(items);
      for (const b of items.blocks) this.touchedBlocks.add(keyString(b.key));
    }
    await writer.drain();
    await writer.putAll([
      ...this.totals.statsItems(),
      ...this.totals.counterItems(),
      ...this.totals.blockItems(this.touchedBlocks),
    ]);
    this.touchedBlocks.clear();
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.sequences(this.accountId),
        UpdateExpression: 'SET deal = :deals, contact = :contacts',
        ExpressionAttributeValues: { ':deals': this.seeded, ':contacts': this.contactList.length },
      }),
    );
    return (performance.now() - started) / 1000;
  }

  /** Deal `i` as a create makes it (a millisecond after deal i - 1), then won or lost as a PATCH would. */
  private dealOf(i: number): Deal {
    const place = this.places[i % this.places.length];
    if (!place) throw new Error('the deal account has no stages');
    const { pipeline, stage } = place;
    const contact = this.contact(DEAL_SEED.contactOf(i));
    const words = DEAL_WORDS.length;
    const createdUs = this.startUs + i * 1000;
    const open = composeDeal({
      input: {
        name: `${DEAL_WORDS[i % words]} ${DEAL_WORDS[(i * 3 + 1) % words]} Q${(i % 4) + 1}${i <= 5 ? ` ${DEAL_SEED.rareWord}` : ''}`,
        amount: DEAL_SEED.amount(i),
        currency: DEAL_SEED.currency(i),
      },
      number: i,
      createdUs,
      place: { pipeline, stage },
      contact,
    });
    const status = DEAL_SEED.status(i);
    if (status === 'open') return open;
    return applyDealChange(
      open,
      { status, ...(status === 'lost' ? { lost_reason: 'Seeded' } : {}) },
      undefined,
      this.config,
      createdUs + 3_600_000_000,
    );
  }
}

/** The items of an entity to put one by one (its shared counters, blocks and stats are summed apart). */
function entityItemsToPut(items: EntityItems): Record<string, unknown>[] {
  return [
    items.entity,
    ...items.boundedPostings,
    ...(items.numberTerm ? [items.numberTerm] : []),
    ...items.prefixTerms,
    ...items.unbounded.map((u) => u.posting),
  ];
}

/** BatchWriteItem of 25 items, 16 batches in flight. */
class BulkWriter {
  private readonly queue: Record<string, unknown>[] = [];
  private readonly writers: Promise<void>[] = [];

  async put(...groups: (Record<string, unknown> | Record<string, unknown>[])[]): Promise<void> {
    for (const g of groups) this.queue.push(...[g].flat());
    while (this.queue.length >= 25) {
      this.writers.push(batchPutAll(this.queue.splice(0, 25)));
      if (this.writers.length >= 16) await Promise.all(this.writers.splice(0));
    }
  }

  async drain(): Promise<void> {
    if (this.queue.length > 0) this.writers.push(batchPutAll(this.queue.splice(0)));
    await Promise.all(this.writers.splice(0));
  }

  async putAll(items: Record<string, unknown>[]): Promise<void> {
    const batches = chunks(items, 25);
    const writer = async () => {
      for (let batch = batches.shift(); batch; batch = batches.shift()) await batchPutAll(batch);
    };
    await Promise.all(Array.from({ length: 16 }, writer));
  }
}
