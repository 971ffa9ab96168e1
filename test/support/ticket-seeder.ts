import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { findContactsByEmail } from '#lib/data/contacts/contacts.ts';
import { type CutPlan, cutPlan } from '#lib/data/index/additions.ts';
import { rememberDirectoryEntries } from '#lib/data/index/directory.ts';
import type { Pending, PendingWrites } from '#lib/data/index/pending.ts';
import { ticketKeys } from '#lib/data/keys.ts';
import { batchPutAll } from '#lib/data/store/client.ts';
import { ATTR, chunks, keyString } from '#lib/data/store/items.ts';
import type { TransactUpdate } from '#lib/data/store/transact.ts';
import { takeCursor } from '#lib/data/tickets/sequences.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { addDecimal } from '#lib/decimal.ts';
import { createdEvent } from '#lib/events/drafts.ts';
import { candidateSetName, needsOpenWork, roundRobinPick } from '#lib/tickets/assignment.ts';
import { composeTicket } from '#lib/tickets/compose-ticket.ts';
import { createDecisions } from '#lib/tickets/create-decisions.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import { CreateTicketSchema } from '#lib/tickets/schemas.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';

/**
 * A bulk seeder for fixtures of many tickets (docs/testing.md, "Seeding"): an account's first tickets, each
 * planned by the index engine exactly as its create plans it (the create's own decisions, composeTicket,
 * tickets.planCreate and the cut to one transaction), and the resulting items written with BatchWriteItem instead of
 * a request each: the entity, postings, terms, sorted postings, directory entries, counters, stats cells and
 * blocks (the commit's additions summed per item, on the shards the creates would use), the items a create marks
 * before its commit marked alike, the ticket sequence and round-robin cursors taken as the creates take them.
 * The container is left as the creates would leave it: the account's settings cached, the directory entries
 * remembered. Not written: what a request writes beside its ticket (its event and the event's place, its rate
 * count, its key's last use).
 * test/api/ticket-seeder.test.ts proves the items equal those of the same creates through the API.
 */
export interface SeedOptions {
  /** Each ticket's creation time (epoch µs); by default 1 ms apart, the last one now. */
  createdUs?: (i: number) => number;
  /**
   * Only the tickets' own items (each with its due entry, which is on it), none of their index items: for a backlog
   * whose runner reads nothing else of the tickets (the breach runner reads the due index and the tickets it
   * breaches), at a twentieth of the writes (10,000 tickets: ~10,000 items instead of ~220,000). The account's
   * lists, totals and search do not count them.
   */
  entitiesOnly?: boolean;
  /**
   * Only what lists and their totals read: the tickets, their postings, blocks, counters and stats cells, not their
   * search terms nor their sorted postings (~9 items a ticket instead of ~22). Search, a ticket by its number and
   * `sort=due` / `sort=queue` do not find them; a change of one (its commit deletes what it was never given, and
   * puts its new sorted postings) leaves the lists exact. For a backlog whose runner and checks read lists and
   * totals only (test/api/agents-handback.test.ts's 5,000 tickets).
   */
  listsOnly?: boolean;
  /** The ticket as composed, changed before it is planned (a bench's time-rule moment: bench/time-rules.ts). */
  shape?: (ticket: Ticket) => Ticket;
}

/** The item types listsOnly leaves out (lib/data/index/items.ts names them: terms, sorted postings). */
const NOT_LISTED = new Set([tickets.index.types.term, `${tickets.index.types.posting}_sorted`]);

/** Seeds `bodies` (as POST /api/tickets takes them) as an account's first tickets; answers them, in order. */
export async function seedTickets(
  accountId: string,
  bodies: readonly Record<string, unknown>[],
  options: SeedOptions = {},
): Promise<Ticket[]> {
  // Through the container's cache, as a create reads it: warm after the seed, as after the creates.
  const config = await getAccountConfig(accountId);
  if (!config) throw new Error(`seedTickets: no account ${accountId}`);
  const first = (await reserveIds(accountId, { ticket: bodies.length })).ticket as number;
  if (first !== 1) throw new Error('seedTickets seeds an account that has no tickets yet');
  const start = nowMicros() - bodies.length * 1000;
  const createdUs = options.createdUs ?? ((i: number) => start + (i + 1) * 1000);
  const decided = bodies.map((body) => {
    const input = parseInput(CreateTicketSchema, body);
    const decisions = createDecisions(config, input);
    const { method } = decisions;
    if (method !== undefined && (method !== 'round_robin' || needsOpenWork(method, decisions.candidates)))
      throw new Error(
        `seedTickets: ${method} assignment decides from the store's counts; create through the API`,
      );
    return { input, ...decisions };
  });
  const cursors = await roundRobinCursors(
    accountId,
    decided.map((d) => (d.method === 'round_robin' ? candidateSetName(d.candidates) : undefined)),
  );
  // One BatchGetItem a hundred addresses, ten at a time: a GetItem each, or every BatchGetItem, all at once ran out
  // of the store's connections (1 s to connect) at 10,000 tickets on a freshly started DynamoDB Local.
  const emails = [...new Set(decided.map((d) => d.input.requester_email.toLowerCase()))];
  const found = [];
  for (const group of chunks(emails, 1_000)) found.push(...(await findContactsByEmail(accountId, group)));
  const contacts = new Map(found.map((contact) => [contact.email.toLowerCase(), contact]));
  const items = new SummedItems();
  const directory = new Set<string>();
  const seeded = decided.map(({ input, category, priority, team, candidates }, i) => {
    const cursor = cursors[i];
    const composed = composeTicket({
      ...{ account: config.account, input, number: first + i, createdUs: createdUs(i) },
      ...{ category, team, priority, contact: contacts.get(input.requester_email.toLowerCase()) },
      assignee: cursor === undefined ? undefined : roundRobinPick(candidates, cursor),
    });
    const ticket = options.shape ? options.shape(composed) : composed;
    // As the create plans it (its event takes room in the commit), in a container that wrote the earlier ones.
    const plan = tickets.planCreate(accountId, ticket, {
      events: [createdEvent('ticket', presentCreatedTicket(ticket))],
      pending: SEEDED,
    });
    const all = plan.directory?.all ?? [];
    const cut = cutPlan({
      ...plan,
      directory: { all, fresh: all.filter((e) => !directory.has(keyString(e))) },
    });
    for (const entry of cut.directory) directory.add(keyString(entry));
    items.addCut(cut, plan.marked);
    return ticket;
  });
  if (options.entitiesOnly) {
    const entities = new Set(ticketKeys.itemPartitions(accountId));
    const own = items.all().filter((item) => entities.has(String(item.pk)));
    await Promise.all(chunks(own, Math.ceil(own.length / 8) || 1).map((group) => batchPutAll(group)));
    return seeded;
  }
  const written = options.listsOnly
    ? items.all().filter((item) => !NOT_LISTED.has(String(item.type)))
    : items.all();
  const groups = chunks(written, Math.ceil(written.length / 8) || 1);
  await Promise.all(groups.map((group) => batchPutAll(group)));
  rememberDirectoryEntries([...items.directoryEntries]);
  return seeded;
}

/**
 * Each round-robin ticket's cursor (undefined for the others), as its create takes it: each candidate set's
 * cursors in one UpdateItem (takeCursor's `count`: the same counter moved by as many), handed out in ticket
 * order, as one create after another would take them.
 */
async function roundRobinCursors(
  accountId: string,
  sets: (string | undefined)[],
): Promise<(number | undefined)[]> {
  const counts = new Map<string, number>();
  for (const set of sets) if (set !== undefined) counts.set(set, (counts.get(set) ?? 0) + 1);
  const next = new Map(
    await Promise.all(
      [...counts].map(
        async ([set, count]) => [set, (await takeCursor(accountId, set, count)) - count + 1] as const,
      ),
    ),
  );
  return sets.map((set) => {
    if (set === undefined) return undefined;
    const cursor = next.get(set) as number;
    next.set(set, cursor + 1);
    return cursor;
  });
}

/**
 * Planned as a create plans it, with a pending item (lib/data/index/pending.ts): its terms and unbounded postings
 * are put, and its block keys added to `p`, as they read once its commit deleted that item, which the seeder's items
 * then leave out.
 */
const SEEDED: Pending = { id: 'seeded', key: { pk: 'SEEDED', sk: 'SEEDED' }, spent: false };

/** The items a series of creates leaves, each key once: puts as put, ADDs summed (numbers) or joined (sets). */
class SummedItems {
  private readonly items = new Map<string, Record<string, unknown>>();
  readonly directoryEntries: Record<string, unknown>[] = [];

  get size(): number {
    return this.items.size;
  }

  all(): Record<string, unknown>[] {
    return [...this.items.values()];
  }

  /** A create's cut, and what it puts before its commit: as they read once the commit landed (no pending mark). */
  addCut(cut: CutPlan, marked: PendingWrites | undefined): void {
    for (const item of marked?.items ?? []) this.put(item);
    for (const block of marked?.blocks ?? [])
      this.add(block.key, ATTR.pendingBlockKeys, new Set([block.packed]));
    for (const item of cut.unconfirmed.items) this.put(item);
    for (const block of cut.unconfirmed.blocks)
      this.add(block.key, ATTR.unconfirmed, new Set([block.packed]));
    for (const { action } of cut.commit) {
      if (action.Put) this.put(action.Put.Item as Record<string, unknown>);
      else if (action.Update) this.update(action.Update);
      else if (!action.ConditionCheck && !action.Delete)
        throw new Error(`seedTickets: a create's ${Object.keys(action)} action`);
    }
    this.directoryEntries.push(...cut.directory);
  }

  private put(item: Record<string, unknown>): void {
    this.items.set(keyString(item), { ...item });
  }

  /** An UpdateItem of `ADD a :x, #b :y` (all a create's updates are). */
  private update(update: TransactUpdate): void {
    const match = /^ADD (.+)$/.exec(update.UpdateExpression ?? '');
    if (!match?.[1]) throw new Error(`seedTickets: an update it cannot sum: ${update.UpdateExpression}`);
    for (const clause of match[1].split(/,\s*/)) {
      const [name = '', value = ''] = clause.trim().split(/\s+/);
      const attribute = name.startsWith('#') ? update.ExpressionAttributeNames?.[name] : name;
      this.add(
        update.Key as Record<string, unknown>,
        attribute ?? name,
        update.ExpressionAttributeValues?.[value],
      );
    }
  }

  private add(key: { pk?: unknown; sk?: unknown }, attribute: string, value: unknown): void {
    const item = this.items.get(keyString(key)) ?? { pk: key.pk, sk: key.sk };
    const had = item[attribute];
    if (value instanceof Set) item[attribute] = new Set([...((had as Set<string>) ?? []), ...value]);
    else {
      const amount = value instanceof NumberValue ? value.value : String(value);
      const sum = addDecimal(had instanceof NumberValue ? had.value : String(had ?? 0), amount);
      item[attribute] = NumberValue.from(sum);
    }
    this.items.set(keyString(key), item);
  }
}
