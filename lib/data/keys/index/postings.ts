import { padId } from '../sort.ts';

/** The index engine's list keys of an entity (lib/data/index/): postings, their counters, packed blocks, stats. */

/**
 * Numbers per block: a dense block holds at most 50 packed keys (about 0.9 KB with its keys, so adding one costs
 * 1 write unit, as a posting's put does).
 */
export const NUMBERS_PER_BLOCK = 50;

/**
 * Blocks side by side in one range of numbers: number n goes to block n mod BLOCK_SPREAD of its range of
 * NUMBERS_PER_BLOCK × BLOCK_SPREAD numbers, so consecutive creates (consecutive numbers) add to different block
 * items and do not meet in their transactions; each block still holds at most NUMBERS_PER_BLOCK keys.
 */
export const BLOCK_SPREAD = 4;

/**
 * From number WIDE_BLOCKS_FROM on, blocks are spread over WIDE_BLOCK_SPREAD (32, as the counter shards): creates n
 * and n + 32 are then the first to meet on a block, at 100 creates/s 320 ms apart, so 1 − e^(−100/32 × 0.02) ≈ 6 %
 * of creates find a block held, where n mod 4 gave 39 % (docs/capacity.md, "The items several changes share"). Below it, 4 as before:
 * a small account keeps a few block items a dimension (a wide range holds 1,600 numbers, so an account of 110
 * would read 32 blocks of 3 keys where it reads 4), and its blocks stay where earlier releases wrote them. An
 * account reaches it after 12,800 creates: 64 narrow ranges, i.e. 8 wide ones, whose numbers the wide ranges'
 * (from 64 on) do not reuse.
 */
export const WIDE_BLOCKS_FROM = 12_800;
const WIDE_BLOCK_SPREAD = 32;

/** The block of a number: its range (narrow below WIDE_BLOCKS_FROM, wide above) and its remainder in it. */
function blockOf(number: number): { range: number; spread: number } {
  if (number < WIDE_BLOCKS_FROM)
    return { range: Math.floor(number / (NUMBERS_PER_BLOCK * BLOCK_SPREAD)), spread: BLOCK_SPREAD };
  const narrowRanges = WIDE_BLOCKS_FROM / (NUMBERS_PER_BLOCK * BLOCK_SPREAD);
  const wide = Math.floor((number - WIDE_BLOCKS_FROM) / (NUMBERS_PER_BLOCK * WIDE_BLOCK_SPREAD));
  return { range: narrowRanges + wide, spread: WIDE_BLOCK_SPREAD };
}

/** Numbers whose entities share their block in every dimension (a range and a remainder: blockOf): `3#1`. */
export function blockGroupOf(number: number): string {
  const { range, spread } = blockOf(number);
  return `${range}#${number % spread}`;
}

/**
 * Shards of a shared counter: a change adds its deltas to one of COUNTER_SHARDS items (a create to its number
 * mod COUNTER_SHARDS, an update to a random one), and a total is the sum of the shards, read in one Query of
 * their partition. docs/capacity.md ("The items several changes share") says why 32.
 */
export const COUNTER_SHARDS = 32;
const shardSort = (shard: number) => String(shard).padStart(2, '0');
/** The sort key range of every shard of a dimension's counter (and the one `#COUNT` item written before). */
const COUNTER_SK = '#COUNT';

/**
 * Stats cells: a family of cells (lib/data/index/declaration.ts, StatsFamily): `counts` (the few-valued counts),
 * `agent` (an agent's open work and assignee count), a deal's `stage`, `stage_board`, …; one partition each.
 */
export function statsKeys(entity: string) {
  return {
    statsPartition: (accountId: string, family: string) => `${entity}_STATS#${accountId}#${family}`,
    /** A cell's item: its value, and for a sharded family the shard (`<value>#<shard>`). */
    statsCell: (accountId: string, family: string, value: string, shard: number | undefined) => ({
      pk: `${entity}_STATS#${accountId}#${family}`,
      sk: shard === undefined ? value : `${value}#${shardSort(shard)}`,
    }),
    /** The sort key range of a sharded cell's shards (a value's own, checked on each item: statsCellOf). */
    statsCellRange: (value: string) => ({ from: `${value}#`, to: `${value}#~` }),
    /** The value and shard a stats cell's sort key names. */
    statsCellOf: (sk: string, sharded: boolean) =>
      sharded
        ? { value: sk.slice(0, sk.lastIndexOf('#')), shard: Number(sk.slice(sk.lastIndexOf('#') + 1)) }
        : { value: sk, shard: undefined },
  };
}

/**
 * Every list dimension (a status, a custom field value, a queue) has a posting partition of small items keyed by
 * order key and a counter, and every one but `all` also has packed blocks.
 */
export function postingKeys(entity: string) {
  const postingPartition = (accountId: string, dimension: string) =>
    `${entity}_INDEX#${accountId}#${dimension}`;
  const blockPartition = (accountId: string, dimension: string) =>
    `${entity}_BLOCKS#${accountId}#${dimension}`;
  return {
    postingPartition,
    posting: (accountId: string, dimension: string, orderKey: string) => ({
      pk: postingPartition(accountId, dimension),
      sk: orderKey,
    }),
    /**
     * Counter of an unbounded dimension (e-mail, custom field value, queue), in its posting partition: one of
     * COUNTER_SHARDS shards (`#COUNT#07`), below every posting; the total is their sum (counterRange).
     */
    counter: (accountId: string, dimension: string, shard = 0) => ({
      pk: postingPartition(accountId, dimension),
      sk: `${COUNTER_SK}#${shardSort(shard)}`,
    }),
    /** The sort keys of a counter's shards, and of the one `#COUNT` item of earlier releases (still summed). */
    counterRange: { from: COUNTER_SK, to: `${COUNTER_SK}#~` },
    isCounterSort: (sk: string) => sk.startsWith(COUNTER_SK),
    /**
     * A dimension's packed block: the packed order keys (a string set) of its items numbered in one range of
     * NUMBERS_PER_BLOCK × BLOCK_SPREAD with one remainder mod BLOCK_SPREAD (from WIDE_BLOCKS_FROM on, of
     * NUMBERS_PER_BLOCK × 32, mod 32: blockOf) (`0000000003#07`; earlier releases
     * wrote one block per NUMBERS_PER_BLOCK, `0000000003`, which the reindex replaces). Read whole when two broad dimensions are intersected (about 16 bytes an item, where a
     * posting costs about 80).
     */
    blockPartition,
    block: (accountId: string, dimension: string, number: number) => {
      const { range, spread } = blockOf(number);
      return {
        pk: blockPartition(accountId, dimension),
        sk: `${padId(range)}#${shardSort(number % spread)}`,
      };
    },
  };
}
