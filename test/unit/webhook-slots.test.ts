import { describe, expect, it } from 'vitest';
import { Slots } from '#lib/webhooks/slots.ts';

/**
 * The runner's attempt slots (lib/webhooks/slots.ts; docs/webhooks.md, "The runners"): slow-lane endpoints of every
 * account share `slowGlobal`, whatever their number of accounts, and the rest stays for the others.
 */
describe('attempt slots', () => {
  it('gives slow-lane endpoints of 50 accounts at most slowGlobal slots together, and the others the rest at once', async () => {
    const slots = new Slots(16, 16, 4, 2);
    const granted: string[] = [];
    for (let a = 0; a < 50; a++)
      void slots.acquire(`hanging-${a}`, true).then((ok) => ok && granted.push(`hanging-${a}`));
    await Promise.resolve();
    expect(granted).toEqual(['hanging-0', 'hanging-1']);
    const healthy = await Promise.all(Array.from({ length: 14 }, () => slots.acquire('healthy')));
    expect(healthy.every(Boolean)).toBe(true);
    expect(slots.inUse('healthy')).toBe(14);
    // A slow slot given back goes to the next slow waiter, in order; a healthy one to no slow waiter.
    slots.release('healthy');
    await Promise.resolve();
    expect(granted).toHaveLength(2);
    slots.release('hanging-0', true);
    await Promise.resolve();
    expect(granted).toEqual(['hanging-0', 'hanging-1', 'hanging-2']);
    slots.close();
  });
});
