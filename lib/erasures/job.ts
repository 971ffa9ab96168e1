import {
  type ErasureProgress,
  type ErasureRecord,
  getErasureProgress,
  getErasureRecord,
  saveErasureProgress,
} from '#lib/data/erasures.ts';
import type { MailEraser } from '#lib/data/mail-store.ts';
import { type Move, type MoveEnd, type Phase, stepSize } from './move.ts';
import { complete } from './phases/complete.ts';
import { contact } from './phases/contact.ts';
import { deals } from './phases/deals.ts';
import { dimensions } from './phases/dimensions.ts';
import { find } from './phases/find.ts';
import { identity } from './phases/identity.ts';
import { leftovers } from './phases/leftovers.ts';
import { mentions } from './phases/mentions.ts';
import { recheck } from './phases/recheck.ts';
import { tickets } from './phases/tickets.ts';
import { trash } from './phases/trash.ts';

/**
 * The erasure job (docs/decisions.md, "Erasing a person"): a person's data found by
 * the indexes that name it (the requester's e-mail postings, the person's references to the mail that named them
 * elsewhere, the contact by e-mail, the contact's deals, each object's references: its events, kept answers and
 * inbound mail) and rewritten, one bounded step at a time. A
 * step does at most STEP_ITEMS items' worth of work, then saves the job's progress item (on the condition that no
 * other runner saved since): a runner killed anywhere resumes from the last saved step, and every step is safe to
 * do twice (a rewrite of what is already erased changes nothing). Phases, in order, one file each in phases/:
 *
 *  find → identity (every name and phone their tickets give them) → tickets (each: the ticket, its messages, its
 *  references) → mentions (the person's references: each ticket their mail reached, redacted as mentioned by the
 *  same moves; each mail of theirs that opened no ticket) → deals (each: the deal, its references) → trash (what
 *  the person had in the trash: references, purged now) → contact (references, the contact) → recheck →
 *  dimensions (what the dimensions the rewrites left, a custom field's value naming the person, leave once empty)
 *  → leftovers (the address's empty counters, blocks, directory entries) → complete (the record, the ledger,
 *  `contact.erased`).
 */
export interface StepOptions {
  mail?: MailEraser | undefined;
  /** The items a step may touch and a page's size (STEP_ITEMS; tests take smaller steps to stop between more). */
  stepItems?: number | undefined;
}

const PHASES: Record<string, Phase> = {
  find,
  identity,
  tickets,
  mentions,
  deals,
  trash,
  contact,
  recheck,
  dimensions,
  leftovers,
  complete,
};

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

/** One move of the job, by its phase: the items it touched (at least 1), or how it ended (move.ts, MoveEnd). */
async function advance(
  accountId: string,
  record: ErasureRecord,
  p: ErasureProgress,
  readStep: number,
  options: StepOptions,
): Promise<MoveEnd> {
  let work = 1;
  const move: Move = {
    accountId,
    record,
    p,
    readStep,
    options,
    count: (store, n = 1) => {
      work += n;
      if (n) p.counts[store] = (p.counts[store] ?? 0) + n;
    },
    worked: (n) => {
      work += n;
    },
  };
  const phase = PHASES[p.phase];
  if (!phase) throw new Error(`Unknown erasure phase ${p.phase}`);
  return (await phase(move)) ?? work;
}

/** Runs an erasure's steps until it completes (tests, the replay, the bench); answers the steps taken. */
export async function runErasure(accountId: string, id: string, options: StepOptions = {}): Promise<number> {
  for (let steps = 1; ; steps++) {
    const outcome = await erasureStep(accountId, id, options);
    if (outcome !== 'more') return steps;
  }
}
