import { isDeepStrictEqual } from 'node:util';
import type { AccountConfig } from '#lib/accounts/types.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { eventShardOfCreation, giveUpReserved, reserveManyPlaces } from '#lib/data/events.ts';
import { pageNumbers } from '#lib/data/imports/page-numbers.ts';
import {
  findSourceKeys,
  pageOutcome,
  type SourceKeyRecord,
  touchSourceKey,
} from '#lib/data/imports/source-keys.ts';
import { commit } from '#lib/data/store/transact.ts';
import { getTicketByUuid } from '#lib/data/tickets/tickets.ts';
import { descriptionMessage, type Message, numberOfMessageId } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { nowMicros, parseTimestamp } from '#lib/time.ts';
import type { ImportedTicket } from './records.ts';
import {
  createImportedTicket,
  type ImportWrite,
  MESSAGES_A_COMMIT,
  type MessageWrite,
  PARTIAL_DIGEST,
  updateImportedTicket,
} from './ticket-commit.ts';
import { composeImported } from './ticket-compose.ts';
import type { ResolvedTicket } from './ticket-refs.ts';
import type { TicketPlan } from './tickets.ts';
import type { ImportContext, ImportOutcome } from './writing.ts';

/** What writing one ticket gave: its outcome, its messages' counts, and why it failed (when it did). */
export interface Outcome {
  ticket: ImportOutcome;
  messages: Partial<Record<ImportOutcome, number>>;
  reason?: string | undefined;
}

const writeOf = (ctx: ImportContext, plan: TicketPlan): ImportWrite => ({
  accountId: ctx.accountId,
  source: ctx.source,
  importId: ctx.importId,
  sourceId: plan.record.sourceId,
  digest: plan.digest,
  mark: ctx.mark,
});

/** The source's messages as written: each composed message with its source id and its mail's Message-ID. */
function messageWrites(record: ImportedTicket, messages: Message[], numbers: number[]): MessageWrite[] {
  const byNumber = new Map(messages.map((m) => [m.number, m]));
  return record.messages.flatMap((m, i) => {
    const message = i === 0 ? undefined : byNumber.get(numbers[i] as number);
    return message ? [{ message, sourceId: m.sourceId, mailId: m.messageId }] : [];
  });
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The events of a new ticket's first commit: its `ticket.created` and its first messages' `message.created`. */
const firstEvents = (record: ImportedTicket) =>
  1 + Math.min(Math.max(record.messages.length - 1, 0), MESSAGES_A_COMMIT);

/**
 * A page's new tickets' numbers (one UpdateItem, in the page's order: the source's creation order) and beside them
 * the places of their first commits' events (one UpdateItem a shard: reserveManyPlaces): one round for the page,
 * where each ticket took its places just before its commit. What one does not use is given up after it
 * (writeTickets, lib/imports/tickets.ts).
 */
export async function reserveFresh(
  ctx: ImportContext,
  fresh: TicketPlan[],
  numbered: TicketPlan[],
): Promise<void> {
  const { accountId, mark } = ctx;
  const wants = fresh.map((p) => ({
    shard: eventShardOfCreation(parseTimestamp(p.record.createdAt)),
    count: firstEvents(p.record),
  }));
  const [numbers, places] = await Promise.allSettled([
    mark === undefined
      ? reserveIds(accountId, { ticket: numbered.length }).then((r) => r.ticket as number)
      : pageNumbers(accountId, mark, numbered.length),
    reserveManyPlaces(accountId, wants),
  ]);
  if (numbers.status === 'rejected' || places.status === 'rejected') {
    if (places.status === 'fulfilled') await giveUpReserved(accountId, places.value);
    throw numbers.status === 'rejected' ? numbers.reason : (places as PromiseRejectedResult).reason;
  }
  // By place among the page's new tickets as its first attempt saw them (without a mark, those are `fresh`): an
  // attempt again takes the same numbers.
  fresh.forEach((p, i) => {
    p.number = numbers.value + numbered.indexOf(p);
    p.place = places.value[i];
  });
}

/** A new ticket: its first commit with the messages that fit, the rest appended (the key's digest set last). */
export async function createOne(
  ctx: ImportContext,
  config: AccountConfig,
  plan: TicketPlan,
  resolved: ResolvedTicket,
): Promise<Outcome> {
  const { record } = plan;
  const numbers = record.messages.map((_, i) => i + 1);
  const { ticket, messages } = composeImported({
    ...{ account: config.account, source: ctx.source, importId: ctx.importId },
    ...{ record, resolved, number: plan.number, numbers, nowUs: nowMicros(), files: plan.files?.byMessage },
  });
  const w = writeOf(ctx, plan);
  const first = record.messages[0];
  const described = first && {
    message: descriptionMessage(ticket),
    sourceId: first.sourceId,
    mailId: first.messageId,
  };
  const [head = [], ...rest] = chunks(messageWrites(record, messages, numbers), MESSAGES_A_COMMIT);
  await createImportedTicket(w, ticket, described, head, { more: rest.length > 0, place: plan.place });
  let version = 1;
  for (const [i, chunk] of rest.entries()) {
    const last = i === rest.length - 1;
    const digest = last ? { read: PARTIAL_DIGEST, next: plan.digest } : undefined;
    version = await updateImportedTicket(w, { before: ticket, after: ticket, version }, chunk, digest);
  }
  return { ticket: 'created', messages: { created: record.messages.length } };
}

/**
 * A ticket found again with another digest: its fields as the source has them now, the messages it lacks appended
 * (numbered after its last), the key's digest moved in the last commit from the one read.
 */
export async function updateOne(
  ctx: ImportContext,
  config: AccountConfig,
  plan: TicketPlan,
  resolved: ResolvedTicket,
): Promise<Outcome> {
  const { record } = plan;
  const found = plan.found as NonNullable<TicketPlan['found']>;
  const [stored, held] = await Promise.all([
    getTicketByUuid(ctx.accountId, String(found.objectId)),
    findSourceKeys(
      ctx.accountId,
      ctx.source,
      'messages',
      record.messages.map((m) => m.sourceId),
    ),
  ]);
  if (!stored) return { ticket: 'failed', messages: { failed: record.messages.length }, reason: GONE };
  const before: Ticket = stored.entity;
  let last = before.messageCount ?? 1;
  const numbers = record.messages.map((m, i) => {
    const key = held.get(m.sourceId);
    if (key) return numberOfMessageId(String(key.objectId)) ?? 1;
    return i === 0 ? 1 : ++last;
  });
  const { ticket, messages } = composeImported({
    ...{ account: config.account, source: ctx.source, importId: ctx.importId },
    ...{ record, resolved, before, numbers, nowUs: nowMicros(), files: plan.files?.byMessage },
  });
  const fresh = messageWrites(record, messages, numbers).filter((m) => !held.has(m.sourceId));
  if (fresh.length === 0 && isDeepStrictEqual(before, ticket)) {
    // Changed at the source in nothing kept here (a message's text edited there): the key's digest moves alone.
    await commit([touchSourceKey(ctx.accountId, ticketRef(ctx, record), found.digest, plan.digest)]);
    return { ticket: 'unchanged', messages: { unchanged: record.messages.length } };
  }
  const parts = fresh.length > 0 ? chunks(fresh, MESSAGES_A_COMMIT) : [[]];
  let version = stored.version;
  let current = before;
  for (const [i, chunk] of parts.entries()) {
    const digest = i === parts.length - 1 ? { read: found.digest, next: plan.digest } : undefined;
    version = await updateImportedTicket(
      writeOf(ctx, plan),
      { before: current, after: ticket, version },
      chunk,
      digest,
    );
    current = ticket;
  }
  return pageTicketOutcome(found, ctx.mark, held, record.messages.length, fresh.length);
}

/**
 * A ticket's outcome as its page's (pageOutcome): created by an earlier attempt at the page (a long conversation
 * whose last parts this attempt appends), or updated, or updated now; its messages created where this attempt or
 * an earlier one at the page claimed them.
 */
export function pageTicketOutcome(
  found: SourceKeyRecord | undefined,
  mark: string | undefined,
  held: Map<string, SourceKeyRecord>,
  messages: number,
  fresh: number,
): Outcome {
  const ticket = pageOutcome(found, mark, 'updated' as const);
  const before = mark === undefined ? 0 : [...held.values()].filter((k) => k.claimed === mark).length;
  const created = fresh + before;
  return { ticket, messages: { created, unchanged: messages - created } };
}

const ticketRef = (ctx: ImportContext, record: ImportedTicket) => ({
  source: ctx.source,
  type: 'tickets' as const,
  sourceId: record.sourceId,
});

const GONE = 'The ticket imported before was deleted here: not imported again';
