import { setTimeout as sleep } from 'node:timers/promises';
import type { Contact } from '#lib/accounts/types.ts';
import { contacts } from '#lib/data/contact-index.ts';
import { findContactByEmail } from '#lib/data/contacts.ts';
import { deals } from '#lib/data/deal-index.ts';
import { deleteMailId } from '#lib/data/email.ts';
import { clearLeftDimensions, noteLeftDimensions } from '#lib/data/empty-dimensions.ts';
import {
  completeErasure,
  deleteEmptyDimension,
  deleteItem,
  deletePersonRef,
  type ErasureProgress,
  type ErasureRecord,
  eraseContact,
  forgetTouched,
  getErasureProgress,
  getErasureRecord,
  markTouched,
  messageItems,
  objectRefs,
  personRefs,
  personRefToken,
  putRewritten,
  readAgain,
  rewriteEvent,
  rewriteItem,
  saveErasureProgress,
  sortKeysFrom,
  touchedAfter,
  touchedObjects,
  trashPage,
} from '#lib/data/erasures.ts';
import { ConcurrentWrite, StaleVersion } from '#lib/data/errors.ts';
import { filterDimensions } from '#lib/data/index/declaration.ts';
import type { ItemKey } from '#lib/data/items.ts';
import { orderKeys } from '#lib/data/keys.ts';
import type { MailEraser } from '#lib/data/mail-store.ts';
import { ackItem, eraseAddressOutbox, isOutboxItem, withdrawnFromOutbox } from '#lib/data/outbox.ts';
import { purgeOne } from '#lib/data/purge.ts';
import { dimension, tickets } from '#lib/data/ticket-index.ts';
import { contactDealsDimension, getTrashed, holdTrashed, type TrashType } from '#lib/data/trash.ts';
import type { Deal } from '#lib/deals/types.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp, nowMicros, parseTimestamp } from '#lib/time.ts';
import { addressHash } from './address-hash.ts';
import { ERASED, type Person, personPattern, redactText, redactValue, withIdentity } from './redact.ts';

/**
 * The erasure job (docs/decisions.md, "Erasing a person"): a person's data found by
 * the indexes that name it (the requester's e-mail postings, the person's references to the mail that named them
 * elsewhere, the contact by e-mail, the contact's deals, each object's references: its events, kept answers and
 * inbound mail) and rewritten, one bounded step at a time. A
 * step does at most STEP_ITEMS items' worth of work, then saves the job's progress item (on the condition that no
 * other runner saved since): a runner killed anywhere resumes from the last saved step, and every step is safe to
 * do twice (a rewrite of what is already erased changes nothing). Phases, in order:
 *
 *  find → tickets (each: the ticket, its messages, its references) → mentions (the person's references: each
 *  ticket their mail reached, redacted as mentioned by the same moves; each mail of theirs that opened no ticket)
 *  → deals (each: the deal, its references) → trash (what the
 *  person had in the trash: references, purged now) → contact (references, the contact) → recheck → dimensions
 *  (what the dimensions the rewrites left, a custom field's value naming the person, leave once empty) →
 *  leftovers (the address's empty counters, blocks, directory entries) → complete (the record, the ledger,
 *  `contact.erased`).
 */
export const STEP_ITEMS = 25;

export type { MailEraser } from '#lib/data/mail-store.ts';

export interface StepOptions {
  mail?: MailEraser | undefined;
  /** The items a step may touch and a page's size (STEP_ITEMS; tests take smaller steps to stop between more). */
  stepItems?: number | undefined;
}

/**
 * How long the recheck waits for the indexes to show what landed before the job's last commit (DynamoDB's global
 * secondary indexes are eventually consistent, typically well under a second): ERASURE_INDEX_SETTLE_MS, 1 s.
 */
const indexSettleMs = () => Number(process.env.ERASURE_INDEX_SETTLE_MS ?? 1_000);

/** A marked posting older than this whose ticket does not exist is an orphan (a create's commit takes seconds). */
const ORPHAN_AGE_MICROS = 60_000_000;

const stepSize = (options: StepOptions) => options.stepItems ?? STEP_ITEMS;

/** How many times a message's rewrite reads it again after a racing write before the step fails (and is retried). */
const REWRITE_TRIES = 5;

export { addressHash };

type Outcome = 'more' | 'completed' | 'gone';

/** A job at its start: the address (lower-cased) is all it knows of the person yet. */
export function firstProgress(address: string): ErasureProgress {
  return {
    step: 0,
    phase: 'find',
    at: null,
    object: null,
    sub: null,
    subAt: null,
    person: { email: address, names: [], phones: [] },
    contact: null,
    counts: {},
  };
}

const TRASH_TYPES = ['ticket', 'deal', 'contact'] as const;

/**
 * One step of an erasure: 'more' when steps remain, 'completed', or 'gone' (no such running erasure). A step goes
 * on through the job's sub-phases (a ticket's messages, its references, its commit; the next object) until it has
 * touched STEP_ITEMS items (StepOptions.stepItems) or a commit of it was raced, then saves the progress once.
 */
export async function erasureStep(
  accountId: string,
  id: string,
  options: StepOptions = {},
): Promise<Outcome> {
  const [record, read] = await Promise.all([
    getErasureRecord(accountId, id),
    getErasureProgress(accountId, id),
  ]);
  if (record?.status !== 'running' || !read) return 'gone';
  const p: ErasureProgress = structuredClone(read);
  for (let used = 0; used < stepSize(options); ) {
    const done = await advance(accountId, record, p, read.step, options);
    if (done === 'completed') return 'completed';
    // Raced: done again from here. Checkpoint: an object is chosen, saved before its commit (the commit takes it
    // out of the index that found it: a step failing after it would not find it again).
    if (done === 'raced' || done === 'checkpoint') break;
    used += done;
  }
  if (JSON.stringify(p) === JSON.stringify(read)) return 'more';
  p.step = read.step + 1;
  await saveErasureProgress(accountId, id, p);
  return 'more';
}

/**
 * One move of the job: the items it touched (at least 1), 'raced' (a commit lost to a write), 'checkpoint' (an
 * object chosen: save before going on), or 'completed'.
 */
async function advance(
  accountId: string,
  record: ErasureRecord,
  p: ErasureProgress,
  readStep: number,
  options: StepOptions,
): Promise<number | 'completed' | 'raced' | 'checkpoint'> {
  let work = 1;
  const count = (store: string, n = 1) => {
    work += n;
    if (n) p.counts[store] = (p.counts[store] ?? 0) + n;
  };
  const person = (): Person => p.person;
  switch (p.phase) {
    case 'find': {
      const contact = await findContactByEmail(accountId, p.person.email);
      if (contact) {
        p.contact = { id: contact.id, uuid: contact.uuid };
        p.person = withIdentity(p.person, fullNameOf(contact), contact.phone);
      }
      next(p, 'identity');
      break;
    }
    case 'identity': {
      // Every name and phone the person's tickets give them, before anything is rewritten: an object rewritten
      // with fewer identifiers than a later ticket teaches would keep those (in it, its events, its kept answers).
      // A page of their postings a move, each ticket read (in parallel); resumed after the page's last key.
      const keys = tickets.index.keys;
      const postings = keys.postingPartition(accountId, dimension.email(accountId, p.person.email));
      const page = (
        await sortKeysFrom(postings, p.at === null ? '0' : `${p.at}\u0000`, stepSize(options))
      ).filter((sk) => !keys.isCounterSort(sk));
      const found = await Promise.all(page.map((orderKey) => tickets.getByOrderKey(accountId, orderKey)));
      for (const stored of found) {
        const requester = stored?.entity.requester;
        if (requester?.email.toLowerCase() === p.person.email) {
          p.person = withIdentity(p.person, requester.name, requester.phone);
        }
      }
      work += page.length;
      if (page.length === 0) next(p, 'tickets');
      else p.at = page.at(-1) ?? null;
      break;
    }
    case 'tickets':
    case 'mentions': {
      // The same machinery for both: the person's own tickets (found by their postings), then the tickets their
      // mail named though they did not request them (found by their person references: redacted as mentioned).
      const mentioned = p.phase === 'mentions';
      if (p.object === null) {
        if (mentioned) return await nextMention(accountId, p, count, options);
        const postings = tickets.index.keys.postingPartition(
          accountId,
          dimension.email(accountId, p.person.email),
        );
        const [orderKey] = await sortKeysFrom(postings, '0', 1);
        const stored = orderKey ? await tickets.getByOrderKey(accountId, orderKey) : undefined;
        if (!orderKey) next(p, 'mentions');
        else if (stored?.entity.requester.email.toLowerCase() !== p.person.email) {
          // A posting no ticket of the person's holds: a failed create's marked orphan, which names the address,
          // or a create still in flight (put before its commit): left alone until its ticket is a minute old.
          if (!stored && orderKeys.parts(orderKey).createdMicros > nowMicros() - ORPHAN_AGE_MICROS)
            return 'raced';
          await deleteItem({ pk: postings, sk: orderKey });
          count('index');
        } else {
          p.person = withIdentity(p.person, stored.entity.requester.name, stored.entity.requester.phone);
          startObject(p, stored.entity.uuid, 'commit');
          return 'checkpoint';
        }
        break;
      }
      if (p.sub === 'trash') {
        // A mentioned ticket in the trash: purged now, as the person's own (its copies erased first); restored
        // meanwhile: erased as a live one.
        const moved = await trashedObjectStep(accountId, p, 'ticket', count, options);
        if (moved === 'purged') await endMention(accountId, p, count);
        else if (moved === 'restored') toSub(p, 'commit');
        break;
      }
      if (p.sub === 'messages') {
        const after = Number(p.subAt ?? 1);
        const page = await messageItems(accountId, p.object, after, stepSize(options));
        const pattern = personPattern(person());
        await allSettled(
          page.map(async (item) => {
            await eraseMailCopies(accountId, item, person(), pattern, count, options, !mentioned);
            if (await rewriteOutboxItem(item, person(), pattern, count, options)) count('messages');
          }),
        );
        if (page.length < stepSize(options)) {
          // The ticket's acknowledgement (an outbox item of its own, EMAIL_ACK#), then its references.
          const ack = await ackItem(accountId, p.object);
          if (ack && (await rewriteOutboxItem(ack, person(), pattern, count, options)))
            count('email_outbound');
          toSub(p, 'refs');
        } else p.subAt = String(page.at(-1)?.number ?? after);
        break;
      }
      if (p.sub === 'refs') {
        if (await refsStep(accountId, p, count, options)) {
          await markTouched(accountId, record.id, 'ticket', p.object);
          if (mentioned) await endMention(accountId, p, count);
          else endObject(p);
        }
        break;
      }
      // The ticket first, then its messages and the copies of it (events, kept answers, mail): a write landing
      // before this commit is in what they read after it; one landing after it is a write on the erased ticket.
      const stored = await tickets.getByUuid(accountId, p.object);
      if (stored && (mentioned || !stored.entity.requester.erased)) {
        // The description's mail first (its Message-ID's item, a copy naming the person): the commit erases the
        // fields that find them.
        await eraseMailCopies(
          accountId,
          stored.entity.descriptionEmail,
          person(),
          personPattern(person()),
          count,
          options,
          !mentioned,
        );
        // Someone else's ticket (mentioned): its requester stays, its description erased only when it is the
        // person's words (redactValue tells by the description's mail).
        const after = redactValue(stored.entity, person()) as Ticket;
        if (!mentioned) after.requester = { ...after.requester, email: '', erased: true };
        if (JSON.stringify(after) !== JSON.stringify(stored.entity)) {
          // The dimensions its values named that it leaves (a custom field holding the person's name), noted
          // first: the last phases delete what they leave once empty.
          await noteLeftDimensions(tickets.index, accountId, record.id, stored.entity, after);
          const landed = await unlessRaced(() =>
            tickets.update(accountId, { before: stored.entity, after, version: stored.version }),
          );
          if (!landed) return 'raced';
          count('tickets');
        }
      }
      toSub(p, 'messages');
      break;
    }
    case 'deals': {
      if (!p.contact) {
        next(p, 'trash');
        break;
      }
      if (p.object === null) {
        const [orderKey] = await sortKeysFrom(
          deals.index.keys.postingPartition(accountId, contactDealsDimension(accountId, p.contact.id)),
          p.at ?? '0',
          1,
        );
        const stored = orderKey ? await deals.getByOrderKey(accountId, orderKey) : undefined;
        if (!orderKey) next(p, 'trash');
        else {
          p.at = `${orderKey}!`;
          if (stored) {
            startObject(p, stored.entity.uuid, 'commit');
            return 'checkpoint';
          }
        }
        break;
      }
      if (p.sub === 'refs') {
        if (await refsStep(accountId, p, count, options)) {
          await markTouched(accountId, record.id, 'deal', p.object);
          endObject(p);
        }
        break;
      }
      const stored = await deals.getByUuid(accountId, p.object);
      if (stored && !stored.entity.contact.erased) {
        const after = redactValue(stored.entity, person()) as Deal;
        after.contact = {
          id: stored.entity.contact.id,
          uuid: stored.entity.contact.uuid,
          fullName: '',
          email: '',
          erased: true,
        };
        after.contactPhone = null;
        await noteLeftDimensions(deals.index, accountId, record.id, stored.entity, after);
        const landed = await unlessRaced(() =>
          deals.update(accountId, { before: stored.entity, after, version: stored.version }),
        );
        if (!landed) return 'raced';
        count('deals');
      }
      toSub(p, 'refs');
      break;
    }
    case 'trash': {
      // What the person had in the trash (the account's trash: at most 30 days of deletions) is purged now.
      const type = (p.sub ?? TRASH_TYPES[0]) as TrashType;
      if (p.object !== null) {
        const moved = await trashedObjectStep(accountId, p, type, count, options);
        if (moved === 'purged') {
          p.object = null;
          p.subAt = null;
        } else if (moved === 'restored') {
          // Restored before the hold: live again, with all it held. The job goes back to its start, which finds
          // it as it finds any live object of the person (bounded: see 'leftovers').
          next(p, 'find');
        }
        break;
      }
      const page = await trashPage(accountId, type, p.at, stepSize(options));
      const match = page.find((t) => holds(t.object, p));
      if (match) {
        p.object = match.uuid;
        p.subAt = null;
        p.at = match.sortKey;
        break;
      }
      if (page.length === stepSize(options)) p.at = page.at(-1)?.sortKey ?? null;
      else {
        const following = TRASH_TYPES[TRASH_TYPES.indexOf(type as (typeof TRASH_TYPES)[number]) + 1];
        if (following) {
          p.sub = following;
          p.at = null;
        } else next(p, 'contact');
      }
      break;
    }
    case 'contact': {
      if (!p.contact) {
        next(p, 'recheck');
        break;
      }
      if (p.object === null) {
        startObject(p, p.contact.uuid, 'commit');
        return 'checkpoint';
      }
      if (p.sub === 'refs') {
        if (await refsStep(accountId, p, count, options)) next(p, 'recheck');
        break;
      }
      if (p.sub === 'trash') {
        // Deleted while the job ran (after the trash phase passed): purged as the trash phase purges.
        const moved = await trashedObjectStep(accountId, p, 'contact', count, options);
        if (moved === 'purged') next(p, 'recheck');
        else if (moved === 'restored') toSub(p, 'commit');
        break;
      }
      const stored = await contacts.getByUuid(accountId, p.contact.uuid);
      if (stored) {
        if (!(await unlessRaced(() => eraseContact(accountId, stored)))) return 'raced';
        count('contact');
      } else if (await getTrashed(accountId, p.contact.uuid)) {
        toSub(p, 'trash');
        break;
      }
      toSub(p, 'refs');
      break;
    }
    case 'recheck': {
      // Each object's copies once more, now that the indexes have caught up: an object's references were read
      // right after its commit, and a global secondary index shows a write some time after it lands (under a
      // second, not guaranteed), so a copy a racing write made just before that commit may have been missed. The
      // contact's first (p.at '' after it), then every ticket and deal the job changed (its TOUCHED items, in key
      // order). Rewriting what is already erased changes nothing.
      if (p.object !== null) {
        if (await refsStep(accountId, p, count, options)) endObject(p);
        break;
      }
      if (p.at === null) {
        await sleep(indexSettleMs());
        p.at = '';
        if (p.contact) {
          startObject(p, p.contact.uuid, 'refs');
          break;
        }
      }
      const touched = await touchedAfter(accountId, record.id, p.at);
      if (!touched) next(p, 'dimensions');
      else {
        p.at = touched.sk;
        startObject(p, touched.uuid, 'refs');
      }
      break;
    }
    case 'dimensions': {
      // What the dimensions the rewrites took the person's objects out of leave once empty (their counters,
      // blocks and directory entries, keyed by a hash of a value that named the person), a page of notes a move.
      const { removed, more } = await clearLeftDimensions(accountId, record.id, stepSize(options));
      count('index', removed);
      work += stepSize(options);
      if (!more) next(p, 'leftovers');
      break;
    }
    case 'leftovers': {
      const email = p.person.email;
      // Something of the person's from before the start is live again (a ticket or contact restored from the
      // trash before the trash phase reached it, or after the contact phase): the job goes back to its start
      // rather than complete with it. Bounded: a go-back erases every such object (out of the address's
      // postings for good), and one can come back only from the trash, where it was before the start: each
      // object of the person's trash brings the job back at most once. A ticket or contact created after the
      // start stays as written (decisions.md, "Writes after the erasure starts").
      if (await liveSinceBefore(accountId, email, parseTimestamp(record.requestedAt))) {
        next(p, 'find');
        break;
      }
      // What the outbox keeps of the address itself: its suppression and its acknowledgement counters.
      count('email_outbound', await eraseAddressOutbox(accountId, email));
      let removed = 0;
      for (const [engine, dim] of [
        [tickets, dimension.email(accountId, email)],
        [contacts, filterDimensions(contacts.index.declaration, accountId, { email })[0] as string],
      ] as const) {
        const keys = engine.index.keys;
        removed += await deleteEmptyDimension(
          keys.postingPartition(accountId, dim),
          keys.blockPartition(accountId, dim),
          keys.directoryEntry(accountId, dim),
          keys.isCounterSort,
        );
      }
      count('index', removed);
      next(p, 'complete');
      break;
    }
    case 'complete': {
      const completedAt = formatTimestamp(nowMicros());
      const touched = await touchedObjects(accountId, record.id);
      await completeErasure(
        accountId,
        { ...record, completedAt, counts: p.counts },
        { ...p, step: readStep },
        {
          type: 'contact.erased',
          object: { uuid: p.contact?.uuid ?? null, tickets: touched.ticket, deals: touched.deal },
          version: 1,
        },
      );
      await forgetTouched(accountId, record.id, touched);
      return 'completed';
    }
    default:
      throw new Error(`Unknown erasure phase ${p.phase}`);
  }
  return work;
}

/** Runs an erasure's steps until it completes (tests, the replay, the bench); answers the steps taken. */
export async function runErasure(accountId: string, id: string, options: StepOptions = {}): Promise<number> {
  for (let steps = 1; ; steps++) {
    const outcome = await erasureStep(accountId, id, options);
    if (outcome !== 'more') return steps;
  }
}

/**
 * A commit that a concurrent write beat (its version moved, or the transaction met another): false, and the step
 * is done again from the same progress, on the object as it now is (so a write racing the erasure is erased too).
 */
async function unlessRaced(commit: () => Promise<unknown>): Promise<boolean> {
  try {
    await commit();
    return true;
  } catch (error) {
    if (error instanceof StaleVersion || error instanceof ConcurrentWrite) return false;
    throw error;
  }
}

/**
 * A page's rewrites, side by side, every one finished before the step goes on or fails (a failed step leaves no
 * write of its own running behind it, to land after the step that does it again).
 */
async function allSettled(work: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

const fullNameOf = (c: Contact) => [c.firstName, c.lastName].filter(Boolean).join(' ');

function next(p: ErasureProgress, phase: string): void {
  p.phase = phase;
  p.at = null;
  endObject(p);
}
function startObject(p: ErasureProgress, uuid: string, sub: string): void {
  p.object = uuid;
  toSub(p, sub);
}
function toSub(p: ErasureProgress, sub: string): void {
  p.sub = sub;
  p.subAt = null;
}
function endObject(p: ErasureProgress): void {
  p.object = null;
  p.sub = null;
  p.subAt = null;
}

/**
 * A message or acknowledgement item of the person's ticket rewritten with the person taken out: a mail still
 * queued to them is taken out of the outbox, the outbox's error text (which may quote the address) redacted with
 * the rest; and the kept copy of a mail the service sent (the folder sender's `.eml`, by its Message-ID) erased.
 * Answers whether the item changed.
 */
async function rewriteOutboxItem(
  item: Record<string, unknown>,
  person: Person,
  pattern: RegExp,
  count: (store: string, n?: number) => void,
  options: StepOptions,
): Promise<boolean> {
  let changed = false;
  // Raced (another erasure rewrote it, or the outbox moved it, since it was read): read again and rewrite that.
  for (let read: Record<string, unknown> | undefined = item, tries = 0; read; tries++) {
    if (tries === REWRITE_TRIES) throw new ConcurrentWrite();
    const redacted = redactValue(read, person, pattern) as Record<string, unknown>;
    changed = JSON.stringify(redacted) !== JSON.stringify(read);
    if (!changed || (await putRewritten(withdrawnFromOutbox(redacted), read))) break;
    read = await readAgain({ pk: String(read.pk), sk: String(read.sk) });
  }
  const messageId = sentMessageId(item);
  if (messageId && options.mail) count('mail', await options.mail.eraseSent(messageId));
  return changed;
}

/** The Message-ID of a mail the service sent (or was to send) from this item, or undefined. */
function sentMessageId(item: Record<string, unknown>): string | undefined {
  const id = (item.email as { message_id?: unknown } | undefined)?.message_id;
  return isOutboxItem(item) && typeof id === 'string' ? id : undefined;
}

/**
 * Whether a trashed object holds the person: their ticket, their contact, a deal of their contact (by its id, or
 * by the e-mail the deal keeps of it: a contact in the trash too is found by no live contact's id).
 */
function holds(object: unknown, p: ErasureProgress): boolean {
  const o = (object ?? {}) as {
    requester?: { email?: string };
    email?: string;
    contact?: { id?: number; email?: string };
  };
  return (
    o.requester?.email?.toLowerCase() === p.person.email ||
    o.email?.toLowerCase() === p.person.email ||
    o.contact?.email?.toLowerCase() === p.person.email ||
    (p.contact !== null && o.contact?.id === p.contact.id)
  );
}

/**
 * Whether the address has a ticket or a contact created before `startMicros` (the erasure's start) live now:
 * the oldest posting of its ticket dimension (order keys sort by creation time), and its contact.
 */
async function liveSinceBefore(accountId: string, email: string, startMicros: number): Promise<boolean> {
  const [oldest] = await sortKeysFrom(
    tickets.index.keys.postingPartition(accountId, dimension.email(accountId, email)),
    orderKeys.first,
    1,
  );
  if (oldest && orderKeys.parts(oldest).createdMicros < startMicros) return true;
  const contact = await findContactByEmail(accountId, email);
  return contact !== undefined && parseTimestamp(contact.createdAt) < startMicros;
}

/** A page of the current object's references rewritten; true once there are no more. */
async function refsStep(
  accountId: string,
  p: ErasureProgress,
  count: (store: string, n?: number) => void,
  options: StepOptions,
): Promise<boolean> {
  const refs = await objectRefs(accountId, p.object ?? '', p.subAt, stepSize(options));
  await allSettled(refs.map((ref) => rewriteRef(accountId, ref, p, count, options)));
  if (refs.length < stepSize(options)) return true;
  p.subAt = refs.at(-1)?.ref ?? null;
  return false;
}

/** One item holding a copy of the object, rewritten with the person taken out. */
async function rewriteRef(
  accountId: string,
  ref: { pk: string; sk: string; ref: string },
  p: ErasureProgress,
  count: (store: string, n?: number) => void,
  options: StepOptions,
): Promise<void> {
  const person = p.person;
  const pattern = personPattern(person);
  const known = { descriptionByPerson: p.describedByPerson };
  const kind = ref.ref.slice(0, ref.ref.indexOf('#'));
  if (kind === 'event') {
    const changed = await rewriteEvent(accountId, ref, (text) =>
      JSON.stringify(redactValue(JSON.parse(text), person, pattern, known)),
    );
    if (changed) count('events');
  } else if (kind === 'idempotency') {
    const changed = await rewriteItem(ref, (item) => {
      const body = JSON.stringify(redactValue(JSON.parse(String(item.body)), person, pattern, known));
      return body === item.body ? undefined : { ...item, body };
    });
    if (changed) count('idempotency');
  } else if (kind === 'inbound') {
    // A ticket's own refs (its entries found by their object reference): the person's own ticket but in the
    // mentions phase, where the ticket is someone else's.
    await rewriteInbound(accountId, ref, person, pattern, count, options, false, p.phase !== 'mentions');
  }
}

/**
 * One move on a trashed object of the person's (or a ticket their mail named) before its purge: first the hold
 * (its trash item made unrestorable, on the condition that it is the one read: a restore can no longer put back
 * what the purge is taking), its copies (`refs#…`), its mail (`sent#…`: the sent copies, Message-IDs and received
 * copies naming the person, its acknowledgement), then the purge itself. 'purged' once done (or found purged),
 * 'restored' when a restore landed before the hold (the object is live: the caller erases it as such), false
 * while there are moves to go.
 */
async function trashedObjectStep(
  accountId: string,
  p: ErasureProgress,
  type: TrashType,
  count: (store: string, n?: number) => void,
  options: StepOptions,
): Promise<'purged' | 'restored' | false> {
  const uuid = p.object ?? '';
  if (p.subAt === null) {
    const held = await holdTrashed(accountId, uuid, type);
    if (held === 'restored') return 'restored';
    if (held === 'gone') return 'purged';
    // Raced (restored and deleted again, or restored just now): the next move reads it again.
    if (held === 'held') p.subAt = 'refs';
    return false;
  }
  if (p.subAt.startsWith('refs')) {
    const refs = await objectRefs(
      accountId,
      uuid,
      p.subAt === 'refs' ? null : p.subAt.slice(5),
      stepSize(options),
    );
    await allSettled(refs.map((ref) => rewriteRef(accountId, ref, p, count, options)));
    if (refs.length < stepSize(options)) p.subAt = 'sent#0';
    else p.subAt = `refs#${refs.at(-1)?.ref}`;
    return false;
  }
  if (p.subAt.startsWith('sent#')) {
    // A trashed ticket's mail, before its purge: the kept copies of what was sent (by the messages' ids: the purge
    // does not reach them) and the received mail naming the person (erased as on a live ticket; the purge then
    // removes the account's copies of the ticket's received mail), then its acknowledgement's copy (the purge
    // deletes the acknowledgement and every Message-ID item of the ticket).
    const after = Number(p.subAt.slice(5));
    const page = await messageItems(accountId, uuid, after, stepSize(options));
    const pattern = personPattern(p.person);
    await allSettled(
      page.map(async (item) => {
        await eraseMailCopies(accountId, item, p.person, pattern, count, options, p.phase !== 'mentions');
        const id = sentMessageId(item);
        if (id && options.mail) count('mail', await options.mail.eraseSent(id));
      }),
    );
    if (page.length === stepSize(options)) {
      p.subAt = `sent#${page.at(-1)?.number ?? after}`;
      return false;
    }
    const trashed = await getTrashed<Ticket>(accountId, uuid);
    await eraseMailCopies(
      accountId,
      trashed?.entity.descriptionEmail,
      p.person,
      pattern,
      count,
      options,
      p.phase !== 'mentions',
    );
    const ack = await ackItem(accountId, uuid);
    if (ack) {
      const id = sentMessageId(ack);
      if (id && options.mail) count('mail', await options.mail.eraseSent(id));
      count('email_outbound');
    }
    p.subAt = 'purge';
    return false;
  }
  const removed = await purgeOne(accountId, uuid, Number.MAX_SAFE_INTEGER, options.mail);
  count('trash', removed === undefined ? 0 : 1);
  count('messages', removed?.messages ?? 0);
  return 'purged';
}

/**
 * The mentions phase between objects: the next page of the person's references (gsi2 `PERSON_REFS#<acc>#<hash>`,
 * after the last one taken, `at`). An inbound log entry (a mail of theirs that opened no ticket) is erased at once
 * and loses its reference in the same Put; a ticket is chosen (live: erased as mentioned; in the trash: purged),
 * its reference deleted once it is done; a reference to a ticket no longer anywhere (purged) is deleted.
 */
async function nextMention(
  accountId: string,
  p: ErasureProgress,
  count: (store: string, n?: number) => void,
  options: StepOptions,
): Promise<number | 'checkpoint'> {
  const hash = addressHash(accountId, p.person.email);
  const refs = await personRefs(accountId, hash, p.at, stepSize(options));
  if (refs.length === 0) {
    next(p, 'deals');
    return 1;
  }
  let work = 1;
  for (const ref of refs) {
    const [kind, id = ''] = splitRef(ref.ref);
    if (kind === 'ticket') {
      const live = await tickets.getByUuid(accountId, id);
      const ticket = live?.entity ?? (await getTrashed<Ticket>(accountId, id))?.entity;
      if (ticket) {
        // Chosen and saved before its commit, with whether its description is the person's (a follow-up their
        // mail opened): the commit erases the mail fields that tell it, and its copies are rewritten after; and
        // with its reference's token, read before its messages are.
        p.refToken = await personRefToken(accountId, hash, id);
        p.at = ref.ref;
        startObject(p, id, live ? 'commit' : 'trash');
        const from = (ticket.descriptionEmail?.email?.from as { email?: string } | undefined)?.email;
        p.describedByPerson = from?.toLowerCase() === p.person.email ? true : undefined;
        return 'checkpoint';
      }
      await deletePersonRef(accountId, hash, id);
      count('index');
    } else if (kind === 'inbound') {
      await rewriteInbound(accountId, ref, p.person, personPattern(p.person), count, options, true, false);
    }
    p.at = ref.ref;
    work++;
  }
  return work;
}

/**
 * A mentioned ticket done: its person reference deleted (last: what found it) if it is still the one read when the
 * ticket was chosen (a mail of the person's that landed after the job read the ticket's messages wrote it again:
 * that mail is kept as written, and its reference with it, for a later erasure to find); the phase goes on.
 */
async function endMention(
  accountId: string,
  p: ErasureProgress,
  count: (store: string, n?: number) => void,
): Promise<void> {
  const hash = addressHash(accountId, p.person.email);
  if (await deletePersonRef(accountId, hash, p.object ?? '', p.refToken)) count('index');
  p.describedByPerson = undefined;
  p.refToken = undefined;
  endObject(p);
}

const splitRef = (ref: string): [string, string] => {
  const at = ref.indexOf('#');
  return [ref.slice(0, at), ref.slice(at + 1)];
};

/**
 * What a received mail's message (or a ticket's description mail) leaves outside its item when it names the
 * person: the item of a Message-ID (its own, or the one it replied to) that holds them (the item keeps the id as
 * written: deleted, so a reply quoting it no longer threads by it), and the raw mail of a mail they were sent or
 * copied, or whose Message-ID or In-Reply-To holds them (its headers name them: the raw file replaced; its
 * attachments, the sender's, stay). The raw mail and
 * attachments of a mail from the person are erased through its inbound log entry (rewriteInbound).
 */
async function eraseMailCopies(
  accountId: string,
  item: { email?: Record<string, unknown>; source?: { inboundId?: unknown; rawKey?: unknown } } | undefined,
  person: Person,
  pattern: RegExp,
  count: (store: string, n?: number) => void,
  options: StepOptions,
  requested: boolean,
): Promise<void> {
  const email = item?.email;
  if (!email) return;
  const names = (text: unknown) => {
    pattern.lastIndex = 0;
    return typeof text === 'string' && pattern.test(text);
  };
  const ids = [...new Set([email.message_id, email.in_reply_to])].filter(names);
  for (const id of ids) {
    if (await deleteMailId(accountId, String(id))) count('email_inbound');
  }
  const from = (email.from as { email?: unknown } | undefined)?.email;
  const copied = [email.to, email.cc].some(
    (list) => Array.isArray(list) && list.some((a) => a === person.email),
  );
  // On the person's own ticket, automatic mail (a bounce of a mail to them, an auto-reply) is about them: its
  // raw copy quotes their address in its text, where no header names it.
  const aboutThem = requested && email.automatic != null;
  const rawKey = item?.source?.rawKey;
  if (
    (copied || ids.length > 0 || aboutThem) &&
    from !== person.email &&
    typeof rawKey === 'string' &&
    options.mail
  ) {
    count('mail', await options.mail.eraseRaw(rawKey));
  }
}

/**
 * An inbound log entry rewritten with the person taken out: a mail from them loses its sender and subject, its
 * raw mail and attachments erased first (so a retry after a failed erase still knows the mail was theirs);
 * `dropRef`: the entry was found by the person's reference, which goes in the same Put. `requested`: the entry is
 * of the person's own ticket, where automatic mail (a delivery report of a mail the service sent them, logged
 * `bounce` before any message is posted; an auto-reply) is about them: its raw mail and attachments quote their
 * address in their text, where no header names it, and are erased too (its entry keeps its sender, a relay's).
 */
async function rewriteInbound(
  accountId: string,
  ref: ItemKey,
  person: Person,
  pattern: RegExp,
  count: (store: string, n?: number) => void,
  options: StepOptions,
  dropRef: boolean,
  requested: boolean,
): Promise<void> {
  const changed = await rewriteItem(ref, async (item) => {
    const from = typeof item.from === 'string' ? item.from.toLowerCase() : '';
    const byPerson = from === person.email;
    const next = redactValue(item, person, pattern) as Record<string, unknown>;
    const aboutThem = requested && (item.outcome === 'bounce' || item.outcome === 'automatic');
    if ((byPerson || aboutThem) && options.mail) {
      count('mail', await options.mail.eraseMail(accountId, String(item.id), String(item.rawKey)));
    }
    if (byPerson) {
      next.from = null;
      next.subject = item.subject == null ? null : ERASED;
      next.headerMessageId =
        item.headerMessageId == null ? null : redactText(String(item.headerMessageId), pattern);
    }
    if (dropRef) {
      delete next.gsi2pk;
      delete next.gsi2sk;
    }
    return JSON.stringify(next) === JSON.stringify(item) ? undefined : next;
  });
  if (changed) count('email_inbound');
}
