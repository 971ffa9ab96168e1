import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Ticket } from '#lib/tickets/types.ts';
import { batchGetAll, batchPutAll, dynamo, getItem, queryAll, tableName } from './client.ts';
import { actionConditionFailed, isConditionFailure, isTransactionConflict } from './errors.ts';
import { type CommitAttachment, completionActions, idempotencyTakenOver } from './idempotency.ts';
import { entityOf, keyString } from './items.ts';
import { accountKeys, ticketKeys } from './keys.ts';
import { foldRate } from './rate-limit.ts';
import {
  dimensionsOf,
  hasBlocks,
  isStatsDimension,
  orderKeyOf,
  orderKeyOfUuid,
  packOrderKey,
  unpackOrderKey,
} from './ticket-index.ts';
import { MAX_TRANSACTION_ITEMS, type TransactAction, type TransactUpdate, transact } from './transact.ts';

export interface TicketStats {
  /** Exact ticket counts of the bounded dimensions (`all`, `status#open`, `priority#high`, `assignee#3`). */
  counts: Record<string, number>;
  /** Open, pending and in-progress tickets per agent id. */
  busy: Record<string, number>;
}

const COUNT_PREFIX = 'n:';
const BUSY_PREFIX = 'busy:';

function statsOf(item: Record<string, unknown> | undefined): TicketStats {
  const stats: TicketStats = { counts: {}, busy: {} };
  for (const [name, value] of Object.entries(item ?? {})) {
    if (name.startsWith(COUNT_PREFIX)) stats.counts[name.slice(COUNT_PREFIX.length)] = value as number;
    if (name.startsWith(BUSY_PREFIX)) stats.busy[name.slice(BUSY_PREFIX.length)] = value as number;
  }
  return stats;
}

/**
 * Takes the next ticket number and, for round-robin, the next cursor of the candidate set, in one update.
 * A number is never handed out twice; one is lost only when the create fails after taking it.
 */
export async function reserveTicketNumber(accountId: string, roundRobinSet?: string) {
  const add = roundRobinSet ? 'ticket :one, #rr :one' : 'ticket :one';
  const names = roundRobinSet ? { '#rr': `rr:${roundRobinSet}` } : undefined;
  const values = { ':one': 1 };
  // The request's rate count rides on this update when it has not been counted yet: a create refused for its
  // rate takes no number, and costs no extra round trip (lib/data/rate-limit.ts).
  const Attributes = await foldRate(accountId, { add, names, values }, async () => {
    const output = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.sequences(accountId),
        UpdateExpression: `ADD ${add}`,
        ...(names ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return output.Attributes ?? {};
  });
  return {
    number: Attributes?.ticket as number,
    cursor: roundRobinSet ? (Attributes?.[`rr:${roundRobinSet}`] as number) : 0,
  };
}

export async function getTicketStats(accountId: string): Promise<TicketStats> {
  return statsOf(await getItem(ticketKeys.stats(accountId)));
}

/** Exact counts of any dimensions: the stats item and the counters of unbounded ones, in one BatchGet. */
export async function getDimensionCounts(
  accountId: string,
  dimensions: string[],
): Promise<Record<string, number>> {
  const unbounded = [...new Set(dimensions.filter((d) => !isStatsDimension(d)))];
  const keys = [ticketKeys.stats(accountId), ...unbounded.map((d) => ticketKeys.counter(accountId, d))];
  const items = await batchGetAll(keys);
  const counts: Record<string, number> = {};
  const stats = statsOf(items.find((i) => i.sk === ticketKeys.stats(accountId).sk));
  for (const d of dimensions) {
    if (isStatsDimension(d)) counts[d] = stats.counts[d] ?? 0;
  }
  for (const d of unbounded) {
    const key = ticketKeys.counter(accountId, d);
    counts[d] = (items.find((i) => i.pk === key.pk && i.sk === key.sk)?.n as number | undefined) ?? 0;
  }
  return counts;
}

/** The least-busy guarantee, checked in the create transaction: the chosen agent is still the least busy. */
export interface BusyCondition {
  chosen: number;
  seen: Record<string, number>;
  candidates: number[];
}

export interface TicketWrite {
  accountId: string;
  ticket: Ticket;
  /** Whether the ticket counts toward its assignee's open work (a domain rule: isOpenWork). */
  openWork: boolean;
  terms: { prefixes: string[]; number: string };
  busyCondition?: BusyCondition;
  /** Written with the commit as it is (the kept answer of the request's Idempotency-Key). */
  attachment?: CommitAttachment | undefined;
}

/**
 * The items of a ticket, as data: what to put, and which counters to increment. The create transaction and
 * the benchmark's bulk loader both write exactly these.
 */
export interface TicketItems {
  ticket: Record<string, unknown>;
  /** Attributes of the stats item to increment by one. */
  statsIncrements: string[];
  /** Postings of the bounded dimensions: atomic with the ticket. */
  boundedPostings: Record<string, unknown>[];
  /** Each unbounded dimension: its posting and the key of its counter (incremented by one). */
  unbounded: { posting: Record<string, unknown>; counterKey: { pk: string; sk: string } }[];
  numberTerm: Record<string, unknown>;
  prefixTerms: Record<string, unknown>[];
  /** The ticket's packed order key in the block of each of its dimensions but `all`. */
  blocks: BlockEntry[];
}

/** A ticket's packed order key in one dimension's block (lib/data/keys.ts, ticketKeys.block). */
export interface BlockEntry {
  key: { pk: string; sk: string };
  packed: string;
}

export function ticketItems(
  write: Omit<TicketWrite, 'busyCondition' | 'attachment'>,
  version = 1,
): TicketItems {
  const { accountId, ticket } = write;
  const orderKey = orderKeyOf(ticket);
  const dims = dimensionsOf(ticket);
  const posting = (d: string) => ({ ...ticketKeys.posting(accountId, d, orderKey), type: 'ticket_posting' });
  const busy = ticket.assignee && write.openWork ? [`${BUSY_PREFIX}${ticket.assignee.id}`] : [];
  return {
    ticket: {
      ...ticketKeys.ticket(accountId, orderKey),
      type: 'ticket',
      ...ticket,
      [VERSION]: version,
      [TERMS]: write.terms.prefixes,
    },
    statsIncrements: [...dims.filter(isStatsDimension).map((d) => `${COUNT_PREFIX}${d}`), ...busy],
    boundedPostings: dims.filter(isStatsDimension).map(posting),
    unbounded: dims
      .filter((d) => !isStatsDimension(d))
      .map((d) => ({ posting: posting(d), counterKey: ticketKeys.counter(accountId, d) })),
    numberTerm: { ...ticketKeys.numberTerm(accountId, write.terms.number, orderKey), type: 'ticket_term' },
    prefixTerms: write.terms.prefixes.map((t) => ({
      ...ticketKeys.prefixTerm(accountId, t, orderKey),
      type: 'ticket_term',
    })),
    blocks: dims
      .filter(hasBlocks)
      .map((d) => ({ key: ticketKeys.block(accountId, d, ticket.number), packed: packOrderKey(orderKey) })),
  };
}

/** A block's packed keys written in their ticket's commit (those put before it, marked, are in `u`). */
export const BLOCK_KEYS = 'k';

/** Adds a packed key to its block: in the commit, or before it, marked (it counts once its ticket holds it). */
function addToBlock(entry: BlockEntry, marked = false): TransactUpdate {
  return {
    TableName: tableName(),
    Key: entry.key,
    UpdateExpression: 'ADD #k :key',
    ExpressionAttributeNames: { '#k': marked ? UNCONFIRMED : BLOCK_KEYS },
    ExpressionAttributeValues: { ':key': new Set([entry.packed]) },
  };
}

/** Takes a packed key out of its block, whether its commit or an earlier marked put wrote it. */
function removeFromBlock(entry: BlockEntry): TransactUpdate {
  return {
    TableName: tableName(),
    Key: entry.key,
    UpdateExpression: 'DELETE #k :key, #u :key',
    ExpressionAttributeNames: { '#k': BLOCK_KEYS, '#u': UNCONFIRMED },
    ExpressionAttributeValues: { ':key': new Set([entry.packed]) },
  };
}

/**
 * What a write adds to the index beyond its commit's fixed part: postings and terms (puts) and block keys
 * (set additions). As many as fit go in the commit, block keys first (a marked block key costs a ticket read
 * to every intersection of its dimension, a marked posting only to the pages it falls on); the rest are
 * written first, marked.
 */
type Addition = { put: Record<string, unknown> } | { block: BlockEntry };

function splitAdditions(additions: Addition[], room: number) {
  const inCommit = additions
    .slice(0, Math.max(0, room))
    .map(
      (a): TransactAction =>
        'put' in a ? { Put: { TableName: tableName(), Item: a.put } } : { Update: addToBlock(a.block) },
    );
  const spilled = additions.slice(Math.max(0, room));
  const marked = spilled.flatMap((a) => ('put' in a ? [{ ...a.put, [UNCONFIRMED]: 1 }] : []));
  const markedBlocks = spilled.flatMap((a) => ('block' in a ? [a.block] : []));
  return {
    inCommit,
    unconfirmed: { items: marked, blocks: markedBlocks },
  };
}

/** Writes a plan's marked additions (before its commit). */
async function putUnconfirmed(unconfirmed: UnconfirmedWrites): Promise<void> {
  await Promise.all([
    unconfirmed.items.length > 0 ? batchPutAll(unconfirmed.items) : undefined,
    ...unconfirmed.blocks.map((b) => dynamo.send(new UpdateCommand(addToBlock(b, true)))),
  ]);
}

/**
 * Writes a ticket so that every reader sees all of it or none of it (docs/data-model.md, "All or nothing").
 *
 * The commit is one transaction holding the ticket, every counter (stats, and each unbounded dimension's),
 * the bounded postings, the number term and the kept answer of an Idempotency-Key; the block keys, then the
 * other postings and the search terms fill it up to DynamoDB's 100 actions. A ticket with more (many custom
 * fields and a long subject) puts the rest first, marked unconfirmed (`u`): readers count and list a marked
 * item or block key only once they have read its ticket, and the ticket exists only if the commit landed. A failure anywhere leaves at most marked
 * items of a ticket that does not exist, which no reader returns or counts.
 */
export async function insertTicket(write: TicketWrite): Promise<void> {
  const plan = planTicketWrite(write);
  try {
    // Marked block keys go to items other tickets' commits hold too: a conflict there is a conflict.
    await putUnconfirmed(plan.unconfirmed);
    await transact(plan.commit);
  } catch (error) {
    if (isTransactionConflict(error)) throw new ConcurrentWrite();
    // Which condition failed: the ticket's own (never: order keys are unique), the least-busy choice, or the
    // Idempotency-Key's claim (its lease ran out and another request holds it now).
    if (write.attachment && actionConditionFailed(error, plan.commit.length - 1))
      throw idempotencyTakenOver();
    if (isConditionFailure(error)) throw new ConcurrentWrite();
    throw error;
  }
}

/** Items put and block keys added before a commit, marked unconfirmed (none for all but the largest tickets). */
export interface UnconfirmedWrites {
  items: Record<string, unknown>[];
  blocks: BlockEntry[];
}

export interface TicketWritePlan {
  unconfirmed: UnconfirmedWrites;
  /** The one transaction that makes the ticket exist. */
  commit: TransactAction[];
}

export function planTicketWrite(write: TicketWrite): TicketWritePlan {
  const { accountId } = write;
  const table = tableName();
  const items = ticketItems(write);

  let condition: Parameters<typeof statsAction>[2];
  if (write.busyCondition) {
    // Still the least busy at commit time: the chosen agent's count is the one seen, agents with a lower id
    // are busier, agents with a higher id at least as busy. A missing counter is zero.
    const { chosen, seen, candidates } = write.busyCondition;
    const seenCount = seen[chosen] ?? 0;
    const names: Record<string, string> = {};
    const expression = candidates
      .map((id) => {
        names[`#b${id}`] = `${BUSY_PREFIX}${id}`;
        const op = id === chosen ? '=' : id < chosen ? '>' : '>=';
        const zeroHolds = op === '>' ? false : seenCount === 0;
        return `(${zeroHolds ? `attribute_not_exists(#b${id}) OR ` : ''}#b${id} ${op} :seen)`;
      })
      .join(' AND ');
    condition = { expression, names, values: { ':seen': seenCount } };
  }
  const put = (Item: Record<string, unknown>): TransactAction => ({ Put: { TableName: table, Item } });
  const increment = (Key: Record<string, string>): TransactAction => ({
    Update: {
      TableName: table,
      Key,
      UpdateExpression: 'ADD n :one',
      ExpressionAttributeValues: { ':one': 1 },
    },
  });

  const commit: TransactAction[] = [
    { Put: { TableName: table, Item: items.ticket, ConditionExpression: 'attribute_not_exists(pk)' } },
    statsAction(
      accountId,
      items.statsIncrements.map((attribute) => [attribute, 1]),
      condition,
    ) as TransactAction,
    ...items.boundedPostings.map(put),
    put(items.numberTerm),
    ...items.unbounded.map((u) => increment(u.counterKey)),
  ];
  // The attachment goes last (insertTicket reads its cancellation reason by position).
  const completion = completionActions(write.attachment);
  const room = MAX_TRANSACTION_ITEMS - commit.length - completion.length;
  const { inCommit, unconfirmed } = splitAdditions(
    [
      ...items.blocks.map((block) => ({ block })),
      ...items.unbounded.map((u) => ({ put: u.posting })),
      ...items.prefixTerms.map((put) => ({ put })),
    ],
    room,
  );
  commit.push(...inCommit, ...completion);
  return { unconfirmed, commit };
}

/**
 * The stats item's part of a transaction: ADD each delta (+1 entering a count or an agent's open work, −1
 * leaving it), with an optional condition (least-busy). Undefined when nothing moves.
 */
function statsAction(
  accountId: string,
  deltas: [attribute: string, delta: number][],
  condition?: { expression: string; names: Record<string, string>; values: Record<string, unknown> },
): TransactAction | undefined {
  const moves = deltas.filter(([, delta]) => delta !== 0);
  if (moves.length === 0) return undefined;
  const names: Record<string, string> = { ...condition?.names };
  const values: Record<string, unknown> = { ...condition?.values };
  const adds = moves.map(([attribute, delta], i) => {
    names[`#c${i}`] = attribute;
    values[`:d${i}`] = delta;
    return `#c${i} :d${i}`;
  });
  return {
    Update: {
      TableName: tableName(),
      Key: ticketKeys.stats(accountId),
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...(condition ? { ConditionExpression: condition.expression } : {}),
    },
  };
}

/** Marks a posting or term written before its ticket's commit: it counts only once its ticket is read. */
export const UNCONFIRMED = 'u';
/** The ticket item's version (its ETag) and its prefix search terms (what a marked term is checked against). */
const VERSION = 'v';
const TERMS = 't';

/**
 * A create lost to a concurrent one: a transaction conflict, or the least-busy condition no longer holding.
 * Nothing was written; the caller may decide again and retry.
 */
export class ConcurrentWrite extends Error {
  constructor() {
    super('A concurrent write changed what this write depended on');
  }
}

/**
 * Order keys of a dimension, newest first. With `limit`, one page of at most that many (a deep page reads
 * its skipped keys too, but only these small key items); without, all of them.
 */
export async function queryPostings(accountId: string, dim: string, limit?: number): Promise<string[]> {
  for (let want = limit; ; ) {
    const items = await queryAll(
      {
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND sk >= :first',
        ExpressionAttributeValues: {
          ':pk': ticketKeys.postingPartition(accountId, dim),
          ':first': ticketKeys.firstOrderKey,
        },
        ProjectionExpression: 'sk, #u',
        ExpressionAttributeNames: { '#u': UNCONFIRMED },
        ScanIndexForward: false,
        ConsistentRead: true,
      },
      want,
    );
    const keys = await confirmed(
      accountId,
      items.map((item) => ({ orderKey: item.sk as string, marked: UNCONFIRMED in item })),
      holdsDimension(dim),
    );
    if (limit === undefined || want === undefined || keys.length >= limit || items.length < want) {
      return keys.slice(0, limit);
    }
    // Postings of tickets that never committed took places in this page: read as many further as this
    // read dropped (counted afresh each pass, so `want` grows only by what is new, and strictly).
    want = limit + (items.length - keys.length);
  }
}

/**
 * Every packed order key a dimension lists, from its blocks (about 16 bytes a ticket: a 4 KB read unit
 * carried 180 of them in the bench, against 36 postings). Marked keys count only once their ticket holds the
 * dimension (confirmed as for postings).
 */
export async function queryBlocks(accountId: string, dim: string): Promise<Set<string>> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': ticketKeys.blockPartition(accountId, dim) },
    ProjectionExpression: '#k, #u',
    ExpressionAttributeNames: { '#k': BLOCK_KEYS, '#u': UNCONFIRMED },
    ConsistentRead: true,
  });
  const keys = new Set<string>();
  const marked: string[] = [];
  for (const item of items) {
    for (const packed of (item[BLOCK_KEYS] as Set<string> | undefined) ?? []) keys.add(packed);
    for (const packed of (item[UNCONFIRMED] as Set<string> | undefined) ?? []) marked.push(packed);
  }
  if (marked.length > 0) {
    const unsure = marked
      .filter((p) => !keys.has(p))
      .map((p) => ({ orderKey: unpackOrderKey(p), marked: true }));
    for (const orderKey of await confirmed(accountId, unsure, holdsDimension(dim)))
      keys.add(packOrderKey(orderKey));
  }
  return keys;
}

/**
 * Which of these order keys a dimension lists: each one's posting read by its key (BatchGet), for a few
 * candidates against a large dimension, where reading the whole posting list would cost more.
 */
export async function postingsAmong(
  accountId: string,
  dim: string,
  orderKeys: string[],
): Promise<Set<string>> {
  const items = await batchGetAll(
    orderKeys.map((k) => ticketKeys.posting(accountId, dim, k)),
    `sk, ${UNCONFIRMED}`,
  );
  const keys = items.map((item) => ({ orderKey: item.sk as string, marked: UNCONFIRMED in item }));
  return new Set(await confirmed(accountId, keys, holdsDimension(dim)));
}

/**
 * Order keys whose ticket lists them: unmarked keys do, since they were written in their ticket's commit (and
 * are removed in the commit that removes them); marked keys (written before their ticket's commit) are kept
 * only when their ticket exists and holds that dimension or term now (one BatchGet of those tickets, rare).
 */
async function confirmed(
  accountId: string,
  keys: { orderKey: string; marked: boolean }[],
  holds: (ticketItem: Record<string, unknown>) => boolean,
): Promise<string[]> {
  const marked = keys.filter((k) => k.marked).map((k) => k.orderKey);
  if (marked.length === 0) return keys.map((k) => k.orderKey);
  const found = await batchGetAll(marked.map((k) => ticketKeys.ticket(accountId, k)));
  const live = new Set(found.filter(holds).map((item) => item.sk as string));
  return keys.filter((k) => !k.marked || live.has(k.orderKey)).map((k) => k.orderKey);
}

const holdsDimension = (dim: string) => (item: Record<string, unknown>) =>
  dimensionsOf(entityOf<Ticket>(item)).includes(dim);
const holdsTerm = (term: string) => (item: Record<string, unknown>) =>
  ((item[TERMS] as string[] | undefined) ?? []).includes(term);

/** The highest code point: `prefix + PREFIX_RANGE_END` sorts after every string that starts with prefix. */
const PREFIX_RANGE_END = '\u{10FFFF}';

/** Order keys of the tickets a search word matches: prefix terms, and the bare number when it is one. */
export async function queryTerm(accountId: string, word: string): Promise<Set<string>> {
  // A word matches the terms it is a prefix of; a bare number also matches that number exactly. The key range
  // of `p#<word>` also holds shorter terms when the word has the key's separator in it (`plan#` reaches
  // `p#plan#<order key>`), hence the check on each term.
  const ranges = [
    { prefix: ticketKeys.prefixTermQuery(word), matches: (term: string) => term.startsWith(word) },
  ];
  if (/^\d+$/.test(word)) {
    ranges.push({ prefix: ticketKeys.numberTermQuery(String(Number(word))), matches: () => true });
  }
  const found = new Set<string>();
  await Promise.all(
    ranges.map(async ({ prefix, matches }) => {
      const items = await queryAll({
        TableName: tableName(),
        // A prefix as a key range: the same items as begins_with, and DynamoDB Local serves a range from
        // its index where it scans the whole partition for begins_with (measured: 4 ms vs 30 ms at 50k terms).
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: {
          ':pk': ticketKeys.termsPartition(accountId),
          ':from': prefix,
          ':to': `${prefix}${PREFIX_RANGE_END}`,
        },
        ProjectionExpression: 'sk, #u',
        ExpressionAttributeNames: { '#u': UNCONFIRMED },
        ConsistentRead: true,
      });
      // Marked items are prefix terms (the number term is always in the commit): sk = p#<term>#<order key>.
      const byTerm = new Map<string, { orderKey: string; marked: boolean }[]>();
      for (const item of items) {
        const sk = item.sk as string;
        const term = sk.slice(2, sk.length - ticketKeys.orderKeyLength - 1);
        if (!matches(term)) continue;
        const key = {
          orderKey: sk.slice(sk.length - ticketKeys.orderKeyLength),
          marked: UNCONFIRMED in item,
        };
        byTerm.set(term, [...(byTerm.get(term) ?? []), key]);
      }
      for (const [term, keys] of byTerm) {
        for (const key of await confirmed(accountId, keys, holdsTerm(term))) found.add(key);
      }
    }),
  );
  return found;
}

/** The newest `limit` tickets of the account, straight from their own partition (order key descending). */
export async function newestTickets(accountId: string, limit: number): Promise<Ticket[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': ticketKeys.ticketPartition(accountId) },
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((item) => entityOf<Ticket>(item));
}

/** Tickets by order key, in the order asked (BatchGet in parallel chunks of 100, strongly consistent). */
export async function getTickets(accountId: string, orderKeys: string[]): Promise<Ticket[]> {
  const items = await batchGetAll(orderKeys.map((k) => ticketKeys.ticket(accountId, k)));
  const byKey = new Map(items.map((item) => [item.sk as string, entityOf<Ticket>(item)]));
  return orderKeys.map((k) => byKey.get(k)).filter((t): t is Ticket => t !== undefined);
}

/** A ticket as stored, with its version (incremented by every update; the ETag). */
export interface StoredTicket {
  ticket: Ticket;
  version: number;
}

/** The ticket a uuid names (its order key is inside it: one GetItem), or undefined. */
export async function getTicketByUuid(accountId: string, uuid: string): Promise<StoredTicket | undefined> {
  const orderKey = orderKeyOfUuid(uuid);
  const stored = orderKey ? await getStoredTicket(accountId, orderKey) : undefined;
  return stored?.ticket.uuid === uuid ? stored : undefined;
}

/** The ticket with this number (its number term gives the order key: one Query, then one GetItem). */
export async function getTicketByNumber(
  accountId: string,
  number: number,
): Promise<StoredTicket | undefined> {
  const [term] = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: {
        ':pk': ticketKeys.termsPartition(accountId),
        ':prefix': ticketKeys.numberTermQuery(String(number)),
      },
      ProjectionExpression: 'sk',
      ConsistentRead: true,
    },
    1,
  );
  const sk = term?.sk as string | undefined;
  return sk ? getStoredTicket(accountId, sk.slice(sk.length - ticketKeys.orderKeyLength)) : undefined;
}

async function getStoredTicket(accountId: string, orderKey: string): Promise<StoredTicket | undefined> {
  const item = await getItem(ticketKeys.ticket(accountId, orderKey));
  return item ? { ticket: entityOf<Ticket>(item), version: Number(item[VERSION] ?? 1) } : undefined;
}

/** A ticket's change: before and after, as the domain decided it, with what the domain decides on them. */
export interface TicketUpdate {
  accountId: string;
  before: Ticket;
  after: Ticket;
  /** The version `before` was read at: the update lands only if the ticket is still at it. */
  version: number;
  openWork: { before: boolean; after: boolean };
  terms: { before: TicketWrite['terms']; after: TicketWrite['terms'] };
  /** Written with the commit as it is (the kept answer of the request's Idempotency-Key). */
  attachment?: CommitAttachment | undefined;
}

/** The ticket changed since it was read (another update landed first): nothing was written. */
export class StaleTicket extends Error {
  constructor() {
    super('The ticket changed since it was read');
  }
}

/** An update whose removals and counter moves alone pass one transaction's 100 actions (see updateTicketItems). */
export class UpdateTooLarge extends Error {
  constructor() {
    super('The update changes more index entries than one transaction holds');
  }
}

/**
 * Applies a ticket's change and moves its index with it, in one transaction guarded by the version: the ticket,
 * the stats item (counters and open work of both assignees), every posting, block key and term the change
 * removes or adds, every counter it moves, and the kept answer of an Idempotency-Key. Readers never see the
 * ticket in a list it left, or counted where it is not. As for creates, additions that do not fit are put first,
 * marked, and count only once the ticket holds them; removals (block keys included) and counter moves must fit
 * (UpdateTooLarge otherwise).
 */
export async function updateTicketItems(update: TicketUpdate): Promise<number> {
  const { accountId } = update;
  const table = tableName();
  const newVersion = update.version + 1;
  const before = ticketItems({
    accountId,
    ticket: update.before,
    openWork: update.openWork.before,
    terms: update.terms.before,
  });
  const after = ticketItems(
    { accountId, ticket: update.after, openWork: update.openWork.after, terms: update.terms.after },
    newVersion,
  );
  const diff = (from: Record<string, unknown>[], to: Record<string, unknown>[]) => {
    const fromKeys = new Set(from.map(keyString));
    const toKeys = new Set(to.map(keyString));
    return {
      removed: from.filter((i) => !toKeys.has(keyString(i))),
      added: to.filter((i) => !fromKeys.has(keyString(i))),
    };
  };

  // The stats item: -1 for what the ticket leaves, +1 for what it enters (counts and open work).
  const statsDelta = new Map<string, number>();
  for (const a of before.statsIncrements) statsDelta.set(a, (statsDelta.get(a) ?? 0) - 1);
  for (const a of after.statsIncrements) statsDelta.set(a, (statsDelta.get(a) ?? 0) + 1);
  const stats = statsAction(accountId, [...statsDelta]);

  const bounded = diff(before.boundedPostings, after.boundedPostings);
  const unboundedPostings = diff(
    before.unbounded.map((u) => u.posting),
    after.unbounded.map((u) => u.posting),
  );
  const counterOf = (posting: Record<string, unknown>, all: TicketItems['unbounded']) =>
    all.find((u) => keyString(u.posting) === keyString(posting))?.counterKey as { pk: string; sk: string };
  const counterMoves = [
    ...unboundedPostings.removed.map((p) => ({ key: counterOf(p, before.unbounded), delta: -1 })),
    ...unboundedPostings.added.map((p) => ({ key: counterOf(p, after.unbounded), delta: 1 })),
  ];
  const terms = diff(before.prefixTerms, after.prefixTerms);
  // A ticket's block in a dimension is the same item before and after (its number does not change).
  const blocksBefore = new Set(before.blocks.map((b) => keyString(b.key)));
  const blocksAfter = new Set(after.blocks.map((b) => keyString(b.key)));
  const blocksLeft = before.blocks.filter((b) => !blocksAfter.has(keyString(b.key)));
  const blocksEntered = after.blocks.filter((b) => !blocksBefore.has(keyString(b.key)));

  const put = (Item: Record<string, unknown>): TransactAction => ({ Put: { TableName: table, Item } });
  const remove = (item: Record<string, unknown>): TransactAction => ({
    Delete: { TableName: table, Key: { pk: item.pk, sk: item.sk } },
  });
  const commit: TransactAction[] = [
    {
      Put: {
        TableName: table,
        Item: after.ticket,
        // Tickets written before versions existed have none: they are at version 1.
        ConditionExpression:
          update.version === 1 ? 'attribute_not_exists(#v) OR #v = :version' : '#v = :version',
        ExpressionAttributeNames: { '#v': VERSION },
        ExpressionAttributeValues: { ':version': update.version },
      },
    },
    ...(stats ? [stats] : []),
    ...counterMoves.map(({ key, delta }) => ({
      Update: {
        TableName: table,
        Key: key,
        UpdateExpression: 'ADD n :d',
        ExpressionAttributeValues: { ':d': delta },
      },
    })),
    ...bounded.removed.map(remove),
    ...bounded.added.map(put),
    ...unboundedPostings.removed.map(remove),
    ...blocksLeft.map((b) => ({ Update: removeFromBlock(b) })),
    ...terms.removed.map(remove),
  ];
  const completion = completionActions(update.attachment);
  const room = MAX_TRANSACTION_ITEMS - commit.length - completion.length;
  if (room < 0) throw new UpdateTooLarge();
  const { inCommit, unconfirmed } = splitAdditions(
    [
      ...blocksEntered.map((block) => ({ block })),
      ...unboundedPostings.added.map((p) => ({ put: p })),
      ...terms.added.map((p) => ({ put: p })),
    ],
    room,
  );
  commit.push(...inCommit, ...completion);

  try {
    await putUnconfirmed(unconfirmed);
    await transact(commit);
  } catch (error) {
    if (isTransactionConflict(error)) throw new ConcurrentWrite();
    if (actionConditionFailed(error, 0)) throw new StaleTicket();
    if (update.attachment && actionConditionFailed(error, commit.length - 1)) throw idempotencyTakenOver();
    throw error;
  }
  return newVersion;
}
