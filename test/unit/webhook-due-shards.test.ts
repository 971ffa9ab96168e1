import { describe, expect, it } from 'vitest';
import { webhookDeliveryKeys } from '#lib/data/keys.ts';
import { DUE_SHARDS, dueShardOf } from '#lib/data/webhooks/due-shards.ts';

/**
 * The webhook due index's shards (lib/data/webhooks/due-shards.ts): an endpoint's entry always goes to the same partition,
 * and endpoints spread over all of them, so no due partition is shared by every account.
 */
describe('due shards', () => {
  const pairs = Array.from({ length: 1600 }, (_, i) => [
    `0000${i.toString(16)}-acc-${i % 97}`,
    `we_${(i * 7919).toString(16).padStart(24, '0')}`,
  ]) as [string, string][];

  it('an endpoint is always in one partition: its entry keys agree at every due time', () => {
    for (const [account, endpoint] of pairs.slice(0, 50)) {
      const partition = webhookDeliveryKeys.due(account, endpoint, 1).gsi2pk;
      expect(webhookDeliveryKeys.due(account, endpoint, Date.now()).gsi2pk).toBe(partition);
      expect(webhookDeliveryKeys.duePartitions).toContain(partition);
    }
  });

  it('1,600 endpoints spread over every one of the DUE_SHARDS partitions, none with more than twice its share', () => {
    const counts = new Array<number>(DUE_SHARDS).fill(0);
    for (const [account, endpoint] of pairs) {
      const shard = dueShardOf(account, endpoint);
      counts[shard] = (counts[shard] ?? 0) + 1;
    }
    const share = pairs.length / DUE_SHARDS;
    expect(Math.min(...counts)).toBeGreaterThan(share / 2);
    expect(Math.max(...counts)).toBeLessThan(share * 2);
    expect(new Set(webhookDeliveryKeys.duePartitions).size).toBe(DUE_SHARDS);
  });
});
