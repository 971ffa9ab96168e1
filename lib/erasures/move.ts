import type { ErasureProgress, ErasureRecord } from '#lib/data/erasures.ts';
import { lostToRace } from '#lib/data/store/errors.ts';
import type { StepOptions } from './job.ts';

/**
 * What a move of the erasure job works with (job.ts: a step is moves until it has touched its items): the
 * erasure, its progress (changed in place: the step saves it once), and the counts of what it changed. A phase
 * (lib/erasures/phases/) is one move's worth of work of its kind.
 */
export interface Move {
  accountId: string;
  record: ErasureRecord;
  p: ErasureProgress;
  /** The step read: the completion holds only while it is still the saved one. */
  readStep: number;
  options: StepOptions;
  /** `n` items changed in a store (the record's counts), each one item of the move's work. */
  count: (store: string, n?: number) => void;
  /** Items the move read or went through without changing them (its work all the same). */
  worked: (n: number) => void;
}

/**
 * A move's end: the items it touched (at least 1), 'raced' (a commit lost to a write), 'checkpoint' (an object
 * chosen: save before going on), or 'completed'; nothing: the items it counted.
 */
export type MoveEnd = number | 'completed' | 'raced' | 'checkpoint';

export type Phase = (move: Move) => Promise<MoveEnd | undefined>;

/** The items a step touches at most, and a page's size (StepOptions.stepItems: tests take smaller steps). */
export const STEP_ITEMS = 25;

export const stepSize = (options: StepOptions) => options.stepItems ?? STEP_ITEMS;

/**
 * A commit that a concurrent write beat (its version moved, or the transaction met another): false, and the step
 * is done again from the same progress, on the object as it now is (so a write racing the erasure is erased too).
 */
export async function unlessRaced(commit: () => Promise<unknown>): Promise<boolean> {
  try {
    await commit();
    return true;
  } catch (error) {
    if (lostToRace(error)) return false;
    throw error;
  }
}

/**
 * A page's rewrites, side by side, every one finished before the step goes on or fails (a failed step leaves no
 * write of its own running behind it, to land after the step that does it again).
 */
export async function allSettled(work: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

export function next(p: ErasureProgress, phase: string): void {
  p.phase = phase;
  p.at = null;
  endObject(p);
}
export function startObject(p: ErasureProgress, uuid: string, sub: string): void {
  p.object = uuid;
  toSub(p, sub);
}
export function toSub(p: ErasureProgress, sub: string): void {
  p.sub = sub;
  p.subAt = null;
}
export function endObject(p: ErasureProgress): void {
  p.object = null;
  p.sub = null;
  p.subAt = null;
}
