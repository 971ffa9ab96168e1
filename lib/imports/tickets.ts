import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig } from '#lib/accounts/types.ts';
import { boundedMap } from '#lib/bounded-map.ts';
import { giveUpReserved, type ReservedPlaces } from '#lib/data/events.ts';
import {
  findSourceKeys,
  replayed,
  SourceKeyMoved,
  type SourceKeyRecord,
} from '#lib/data/imports/source-keys.ts';
import { TeamGone } from '#lib/data/people/people.ts';
import { lostToRace, UpdateTooLarge } from '#lib/data/store/errors.ts';
import { NotFound } from '#lib/errors.ts';
import { MAX_TICKET_JSON_BYTES } from '#lib/tickets/create-decisions.ts';
import { MAX_MESSAGE_BODY } from '#lib/tickets/messages/message.ts';
import { recordDigest } from './digest.ts';
import type { ImportErrorRow, ImportedTicket, ImportRecord } from './records.ts';
import { copyTicketFiles, decideTicketFiles, type TicketFiles } from './ticket-files.ts';
import { type ResolvedTicket, readPageRefs, resolveTicket } from './ticket-refs.ts';
import { createOne, type Outcome, pageTicketOutcome, reserveFresh, updateOne } from './ticket-write.ts';
import { countOutcome, type ImportContext, type ImportOutcome, type PageWritten } from './writing.ts';

/**
 * The import writer of tickets and their conversations (issue 42; decisions.md, "Imports: moving a helpdesk in";
 * docs/imports.md, "Writing tickets"). A page's tickets are read against their source keys in one BatchGet: a new
 * one is created with the account's next reference (numbers taken for the page at once, in the source's creation
 * order, with the places of their first commits' events), its messages and their keys in its own commit; one
 * found again is `unchanged` when its record's digest is the one its key holds, else `updated` (its fields as the
 * source has them now, new messages appended). A key claimed or moved by another run meanwhile (two runs racing, a
 * page written again after a crash) makes the ticket decided again on the key as it now is: never a duplicate. The
 * page's tickets are written concurrently (bounded).
 */

/** Tickets of a page written at once. */
export const TICKETS_AT_ONCE = 8;
/** Decisions of one ticket made again after losing a race before the page fails. */
const ATTEMPTS = 5;

/** A ticket of the page, decided: resolved against the people it names, or failed with a reason. */
export interface TicketPlan {
  record: ImportedTicket;
  digest: string;
  resolved: ResolvedTicket | { failed: string };
  found: SourceKeyRecord | undefined;
  number?: number | undefined;
  /** A new ticket's places for its first commit's events, reserved with its number (reserveFresh). */
  place?: ReservedPlaces | undefined;
  /** Messages left out after the plan (another ticket's ids): counted failed. */
  dropped?: number | undefined;
  /** Its attachments, copied before its commit (lib/imports/ticket-files.ts). */
  files?: TicketFiles | undefined;
}

export async function writeTickets(ctx: ImportContext, records: ImportRecord[]): Promise<PageWritten> {
  const written: PageWritten = { counts: {}, errors: [] };
  const page = records
    .flatMap((r) => (r.type === 'tickets' ? [withUniqueMessages(r.ticket, written.errors)] : []))
    .sort((a, b) => byCreation(a.createdAt, b.createdAt) || byCreation(a.sourceId, b.sourceId));
  if (page.length === 0) return written;
  const config = await getAccountConfig(ctx.accountId);
  if (!config) throw new NotFound();
  const [refs, keys] = await Promise.all([
    readPageRefs(ctx.accountId, config, ctx.source, page, ctx.validate ? ctx.importId : undefined),
    findSourceKeys(
      ctx.accountId,
      ctx.source,
      'tickets',
      page.map((t) => t.sourceId),
    ),
  ]);
  const plans: TicketPlan[] = page.map((record) => ({
    record,
    digest: recordDigest(record),
    resolved: oversized(record) ?? resolveTicket(record, refs),
    found: keys.get(record.sourceId),
  }));
  // The page's new tickets as its first attempt saw them (those it made carry the page's mark), and those still new.
  const numbered = plans.filter(
    (p) => (!p.found || replayed(p.found, ctx.mark) === 'created') && !('failed' in p.resolved),
  );
  const fresh = numbered.filter((p) => !p.found);
  if (!ctx.validate && fresh.length > 0) await reserveFresh(ctx, fresh, numbered);
  // Places a ticket's commit did not take (it failed before, or was not written): no later event waits on them.
  const outcomes = await boundedMap(plans, TICKETS_AT_ONCE, async (plan) => {
    if (ctx.validate) {
      const decided = await decideOnly(ctx, plan);
      ctx.onTicket?.();
      return decided;
    }
    try {
      const outcome = await writeOne(ctx, config, plan);
      ctx.onTicket?.();
      return outcome;
    } finally {
      await giveUpReserved(ctx.accountId, [plan.place]);
    }
  }).catch(async (error: unknown) => {
    await giveUpReserved(
      ctx.accountId,
      plans.map((p) => p.place),
    ).catch(() => undefined);
    throw error;
  });
  for (const [i, outcome] of outcomes.entries()) {
    const plan = plans[i] as TicketPlan;
    countOutcome(written, 'tickets', outcome.ticket);
    for (let k = 0; k < (plan.dropped ?? 0); k++) countOutcome(written, 'messages', 'failed');
    const validating = ctx.validate && ctx.copiesFiles !== false;
    const files = plan.files ?? decideTicketFiles(plan.record, outcome.ticket, validating);
    for (const [type, counts] of [
      ['messages', outcome.messages],
      ['attachments', files.counts],
    ] as const) {
      for (const [kind, n] of Object.entries(counts) as [ImportOutcome, number][]) {
        for (let k = 0; k < n; k++) countOutcome(written, type, kind);
      }
    }
    written.errors.push(...files.errors);
    if ('failed' in plan.resolved) {
      written.errors.push({ type: 'tickets', sourceId: plan.record.sourceId, reason: plan.resolved.failed });
    } else if (outcome.reason) {
      written.errors.push({ type: 'tickets', sourceId: plan.record.sourceId, reason: outcome.reason });
    } else if (outcome.ticket !== 'unchanged') written.errors.push(...plan.resolved.errors);
  }
  return written;
}

const byCreation = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * A message id given twice in one ticket: the first kept, the others error rows (a key names one message). A
 * message's body past MAX_MESSAGE_BODY (the API's own limit, and what keeps a message one item): cut there, with an
 * error row (the description is bounded with the ticket: oversized).
 */
function withUniqueMessages(ticket: ImportedTicket, errors: ImportErrorRow[]): ImportedTicket {
  const seen = new Set<string>();
  const messages = ticket.messages.flatMap((m, i) => {
    if (seen.has(m.sourceId)) {
      errors.push({
        type: 'messages',
        sourceId: m.sourceId,
        reason: 'The message id is given twice in its ticket',
      });
      return [];
    }
    seen.add(m.sourceId);
    if (i === 0 || m.body.length <= MAX_MESSAGE_BODY) return [m];
    const reason = `The body was cut to ${MAX_MESSAGE_BODY} characters`;
    errors.push({ type: 'messages', sourceId: m.sourceId, reason });
    return [{ ...m, body: m.body.slice(0, MAX_MESSAGE_BODY) }];
  });
  return { ...ticket, messages };
}

/** A ticket too large for one item (MAX_TICKET_JSON_BYTES, as a create refuses it). */
function oversized(record: ImportedTicket): { failed: string } | undefined {
  const { subject, tags, customFields } = record;
  const text = JSON.stringify({ subject, tags, customFields, description: record.messages[0]?.body ?? '' });
  if (Buffer.byteLength(text, 'utf8') <= MAX_TICKET_JSON_BYTES) return undefined;
  return { failed: 'The ticket is too large: subject, description, tags and custom fields pass 300 KB' };
}

const failed = (plan: TicketPlan, reason?: string): Outcome => ({
  ticket: 'failed',
  messages: { failed: plan.record.messages.length },
  reason,
});

/** One ticket written: created, unchanged or updated, decided again on its key after a lost race. */
async function writeOne(ctx: ImportContext, config: AccountConfig, plan: TicketPlan): Promise<Outcome> {
  const { resolved } = plan;
  if ('failed' in resolved) return failed(plan);
  for (let attempt = 1; ; attempt++) {
    try {
      if (plan.found?.digest === plan.digest) return await unchangedOne(ctx, plan);
      if (ctx.attachments)
        plan.files ??= await copyTicketFiles(ctx, ctx.attachments, plan.record, !plan.found);
      if (!plan.found) return await createOne(ctx, config, plan, resolved);
      return await updateOne(ctx, config, plan, resolved);
    } catch (error) {
      if (error instanceof TeamGone) return failed(plan, 'Its team was deleted while it was imported');
      if (error instanceof UpdateTooLarge) return failed(plan, 'The change is too large for one commit');
      const lost = error instanceof SourceKeyMoved || lostToRace(error);
      if (!lost || attempt >= ATTEMPTS) throw error;
      const { sourceId } = plan.record;
      plan.found = (await findSourceKeys(ctx.accountId, ctx.source, 'tickets', [sourceId])).get(sourceId);
      if (!plan.found && error instanceof SourceKeyMoved) {
        const reason = await withoutOthersMessages(ctx, plan, resolved);
        if (reason) return failed(plan, reason);
      }
    }
  }
}

/**
 * A ticket whose key holds its record's digest: unchanged, unless an earlier attempt at this page wrote it (its
 * counts never saved: pageTicketOutcome), whose messages' keys then say which it created.
 */
async function unchangedOne(ctx: ImportContext, plan: TicketPlan): Promise<Outcome> {
  const { messages } = plan.record;
  if (replayed(plan.found, ctx.mark) === undefined)
    return { ticket: 'unchanged', messages: { unchanged: messages.length } };
  const ids = messages.map((m) => m.sourceId);
  const held = await findSourceKeys(ctx.accountId, ctx.source, 'messages', ids);
  return pageTicketOutcome(plan.found, ctx.mark, held, messages.length, 0);
}

/**
 * A create refused on a message's key while its ticket's is free: the source gave another ticket's message id (a
 * hand-made file). Those messages are left out with an error row each (counted failed), and the ticket written
 * without them; when it is the description's, the ticket fails (answers the reason).
 */
async function withoutOthersMessages(ctx: ImportContext, plan: TicketPlan, resolved: ResolvedTicket) {
  const { messages } = plan.record;
  const ids = messages.map((m) => m.sourceId);
  const held = await findSourceKeys(ctx.accountId, ctx.source, 'messages', ids);
  if (held.size === 0) return undefined;
  if (held.has(ids[0] as string)) return "Its description's message id is another ticket's message";
  const kept = messages.map((m) => !held.has(m.sourceId));
  for (const m of messages.filter((_, i) => !kept[i])) {
    resolved.errors.push({
      type: 'messages',
      sourceId: m.sourceId,
      reason: "The message id is another ticket's",
    });
  }
  plan.record = { ...plan.record, messages: messages.filter((_, i) => kept[i]) };
  resolved.authors = resolved.authors.filter((_, i) => kept[i]);
  plan.dropped = (plan.dropped ?? 0) + held.size;
  return undefined;
}

/** What a write would do, decided from the keys alone (validate): nothing written. */
async function decideOnly(ctx: ImportContext, plan: TicketPlan): Promise<Outcome> {
  const { record, found } = plan;
  if ('failed' in plan.resolved) return failed(plan);
  if (!found) return { ticket: 'created', messages: { created: record.messages.length } };
  if (found.digest === plan.digest)
    return { ticket: 'unchanged', messages: { unchanged: record.messages.length } };
  const ids = record.messages.map((m) => m.sourceId);
  const held = await findSourceKeys(ctx.accountId, ctx.source, 'messages', ids);
  return { ticket: 'updated', messages: { created: ids.length - held.size, unchanged: held.size } };
}
