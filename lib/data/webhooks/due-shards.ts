import { createHash } from 'node:crypto';

/**
 * How many partitions the webhook due index (gsi2) is spread over. One partition key takes at most 1,000 write
 * units a second, and with the index as it was first (gsi1, projection ALL) every write of an endpoint item in it
 * wrote the index too (the fan-out's due entry, the lease, its renewal, the record's attempt count, the release):
 * 1.1 index units per delivery in a backlog, up to 6.6 in a trickle (docs/performance.md, "Webhooks"; keys only, it
 * is written only when the entry moves). At the design load of 50,000 deliveries a
 * minute (833/s, docs/capacity.md) that is ~900 to ~5,500 units a second: on one key, at or past its limit, and
 * its throttling would push back on every account's writes. Over 16 keys it is at most ~350 units a second each,
 * a third of one partition's limit, and the runner still reads them all in one round of parallel Queries.
 */
export const DUE_SHARDS = 16;

/**
 * The due partition of an endpoint: a hash of its account and id, so an endpoint is always in the same one (its
 * lease and release move the sort key only) and an account's endpoints spread over several.
 */
export function dueShardOf(accountId: string, endpointId: string): number {
  return createHash('sha256').update(`${accountId}#${endpointId}`).digest().readUInt32BE(0) % DUE_SHARDS;
}

/**
 * The due shards runner `runner` of `runners` owns (the worker pool: docs/webhooks.md, "The runners"): shard s goes
 * to runner s mod runners, so the runners' sets are disjoint and together all DUE_SHARDS; two runners never read the
 * same entries. `runners` is 1 to DUE_SHARDS.
 */
export function shardsOfRunner(runner: number, runners: number): number[] {
  if (!Number.isInteger(runners) || runners < 1 || runners > DUE_SHARDS) {
    throw new Error(`due runners must be 1 to ${DUE_SHARDS}, got ${runners}`);
  }
  if (!Number.isInteger(runner) || runner < 0 || runner >= runners) {
    throw new Error(`due runner must be 0 to ${runners - 1}, got ${runner}`);
  }
  return Array.from({ length: DUE_SHARDS }, (_, shard) => shard).filter(
    (shard) => shard % runners === runner,
  );
}
