import { NUMBERS_PER_BLOCK } from '../keys.ts';
import { ReadBudgetExceeded } from '../store/errors.ts';

/**
 * How a list that names several dimensions (or search words) reads them (intersection.ts), decided from the
 * counters alone before any key is read: a pure function of the dimensions' sizes, the account's and the budget.
 */

/** How several dimensions are intersected: which drives, which are read whole, which are asked by key. */
export interface IntersectionPlan {
  /** The smallest dimension, whose keys are the candidates (none when search words drive). */
  driver: string | undefined;
  /** Dimensions whose blocks are read whole, beside the driver. */
  whole: string[];
  /** Dimensions asked for just the candidates' postings, by key, once the candidates are known. */
  byKey: string[];
}

/**
 * The cheapest exact plan, from the counters: the search words drive (their candidates are given), or else the
 * smallest dimension; each other dimension is read whole when its blocks (its postings, for one that keeps no
 * blocks) cost no more read units than asking
 * for every candidate's posting by key (a unit each, in each of the partitions its postings are kept in:
 * `sources`, 1 unless a queue lists it), which is the case unless the candidates are few against it.
 */
export function planIntersection(
  dims: { dim: string; size: number; sources?: number; blocks?: boolean }[],
  accountSize: number,
  wordCandidates: number | undefined,
): IntersectionPlan {
  const bySize = [...dims].sort((a, b) => a.size - b.size);
  const driver = wordCandidates === undefined ? bySize.shift() : undefined;
  const candidates = driver ? driver.size : (wordCandidates ?? 0);
  const readWhole = (d: { size: number; sources?: number; blocks?: boolean }) =>
    (d.blocks === false ? postingReadUnits(d.size) : blockReadUnits(d.size, accountSize)) <=
    candidates * (d.sources ?? 1);
  return {
    driver: driver?.dim,
    whole: bySize.filter(readWhole).map((d) => d.dim),
    byKey: bySize.filter((d) => !readWhole(d)).map((d) => d.dim),
  };
}

/**
 * The index keys a plan reads, from the counters: the driver's and each whole dimension's keys (their blocks),
 * and each candidate's posting in every dimension asked by key.
 */
export function planKeys(
  plan: IntersectionPlan,
  dims: { dim: string; size: number }[],
  wordCandidates: number | undefined,
): number {
  const size = (d: string) => dims.find((x) => x.dim === d)?.size ?? 0;
  const candidates = plan.driver ? size(plan.driver) : (wordCandidates ?? 0);
  return (
    (plan.driver ? candidates : 0) +
    plan.whole.reduce((n, d) => n + size(d), 0) +
    candidates * plan.byKey.length
  );
}

/**
 * The plan, if its keys fit the budget; else the plan that reads fewest keys (each dimension read whole only when
 * it holds no more keys than there are candidates, asked by key otherwise: one more round trip, only for such
 * lists), if that fits; else ReadBudgetExceeded (`filters`), before any key of the dimensions is read.
 */
export function planWithinBudget(
  plan: IntersectionPlan,
  dims: { dim: string; size: number }[],
  wordCandidates: number | undefined,
  budget: number,
): IntersectionPlan {
  if (planKeys(plan, dims, wordCandidates) <= budget) return plan;
  const size = (d: string) => dims.find((x) => x.dim === d)?.size ?? 0;
  const candidates = plan.driver ? size(plan.driver) : (wordCandidates ?? 0);
  const others = [...plan.whole, ...plan.byKey];
  const fewest: IntersectionPlan = {
    driver: plan.driver,
    whole: others.filter((d) => size(d) <= candidates),
    byKey: others.filter((d) => size(d) > candidates),
  };
  if (planKeys(fewest, dims, wordCandidates) <= budget) return fewest;
  throw new ReadBudgetExceeded('filters');
}

/**
 * Read units of a dimension's blocks, read whole, estimated: its packed keys (16 bytes each) and the keys and
 * overhead of its blocks (about 100 bytes each; about one block per NUMBERS_PER_BLOCK entities of the account, and
 * at most one per entity it lists; more where numbers were lost to failed creates or blocks were emptied by
 * updates, so the estimate leans towards reading whole). A posting read by key costs one unit.
 */
function blockReadUnits(listed: number, accountSize: number): number {
  const blocks = Math.min(listed, Math.ceil(accountSize / NUMBERS_PER_BLOCK) + 1);
  return (listed * PACKED_KEY_BYTES + blocks * BLOCK_OVERHEAD_BYTES) / READ_UNIT_BYTES;
}
/** Read units of a dimension's postings read whole (one that keeps no blocks): about 170 bytes a posting. */
const postingReadUnits = (listed: number) => (listed * POSTING_BYTES) / READ_UNIT_BYTES;
const POSTING_BYTES = 170;
const PACKED_KEY_BYTES = 16;
const BLOCK_OVERHEAD_BYTES = 100;
const READ_UNIT_BYTES = 4096;
