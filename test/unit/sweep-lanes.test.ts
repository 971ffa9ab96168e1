import { describe, expect, it } from 'vitest';
import { orderKeys } from '#lib/data/keys.ts';
import { statusLanes } from '#lib/data/rules/sweep-lanes.ts';

/**
 * A status's lanes of the moment sweep (docs/rules.md, "Lanes"): one per `perLane` tickets, at least one and at
 * most `most`, ranges of equal time from the oldest posting to now that meet end to end, the first from the oldest
 * and the last to the newest, so every posting (any time, any number from 1) is in exactly one.
 */
const sizes = { perLane: 1_000, most: 8 };
const key = (us: number, number: number) => orderKeys.of(us, number);
/** The lane a posting is in, as the lane's Query reads it: after `after` (exclusive), up to `before` (inclusive). */
const laneOf = (lanes: ReturnType<typeof statusLanes>, at: string) =>
  lanes.filter((l) => (l.after === null || at > l.after) && (l.before === null || at <= l.before));

describe('the moment sweep lanes of a status', () => {
  it('one lane per 1,000 tickets, 1 to 8', () => {
    const oldest = key(1_000_000, 7);
    expect(statusLanes('open', 0, undefined, 5_000_000, sizes)).toHaveLength(1);
    expect(statusLanes('open', 300, oldest, 5_000_000, sizes)).toHaveLength(1);
    expect(statusLanes('open', 5_000, oldest, 5_000_000, sizes)).toHaveLength(5);
    expect(statusLanes('open', 1_000_000, oldest, 5_000_000, sizes)).toHaveLength(8);
    // No more lanes than microseconds to split: a status created all at once is one lane.
    expect(statusLanes('open', 5_000, key(4_999_998, 1), 5_000_000, sizes)).toHaveLength(2);
  });

  it('ranges meet end to end; every posting is in exactly one lane', () => {
    const lanes = statusLanes('pending', 8_000, key(1_000_000, 3), 9_000_000, sizes);
    expect(lanes.map((l) => l.status)).toEqual(Array(8).fill('pending'));
    expect(lanes[0]?.after).toBeNull();
    expect(lanes.at(-1)?.before).toBeNull();
    for (let i = 1; i < lanes.length; i++) expect(lanes[i]?.after).toBe(lanes[i - 1]?.before);
    const bounds = lanes.flatMap((l) => (l.before ? [orderKeys.parts(l.before).createdMicros] : []));
    expect(bounds).toEqual([2_000_000, 3_000_000, 4_000_000, 5_000_000, 6_000_000, 7_000_000, 8_000_000]);
    // At a bound, on each side of it, before the oldest and after now.
    for (const us of [0, 1_000_000, 1_999_999, 2_000_000, 2_000_001, 8_999_999, 9_000_000, 99_000_000])
      for (const number of [1, 2, 9_999_999_999]) expect(laneOf(lanes, key(us, number))).toHaveLength(1);
    expect(laneOf(lanes, key(2_000_000, 1))[0]).toBe(lanes[1]);
    expect(laneOf(lanes, key(1_999_999, 9_999_999_999))[0]).toBe(lanes[0]);
  });
});
