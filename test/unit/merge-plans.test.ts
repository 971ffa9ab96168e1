import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { coalesce } from '#lib/data/index/merge-plans.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';

/**
 * Several entities' updates in one commit (lib/data/index/merge-plans.ts): DynamoDB takes one action an item, so the
 * updates they share are merged (numbers summed, sets joined) and a conditioned one is never merged away.
 */
const key = (sk: string) => ({ pk: 'P', sk });
const update = (
  sk: string,
  expression: string,
  names: Record<string, string>,
  values: Record<string, unknown>,
) =>
  ({
    what: 'stats',
    action: {
      Update: {
        TableName: 't',
        Key: key(sk),
        UpdateExpression: expression,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
  }) as CommitAction;

describe('coalescing a combined commit', () => {
  it('sums the deltas and joins the sets of one item’s updates, keeping the others apart', () => {
    const merged = coalesce([
      update(
        'cell',
        'ADD #c0 :d0, #c1 :d1',
        { '#c0': 'busy:3', '#c1': 'n:3' },
        {
          ':d0': NumberValue.from('-1'),
          ':d1': NumberValue.from('-1'),
        },
      ),
      update('block', 'DELETE #k :key, #u :key', { '#k': 'k', '#u': 'u' }, { ':key': new Set(['a']) }),
      update('cell', 'ADD #c0 :d0', { '#c0': 'busy:3' }, { ':d0': NumberValue.from('-1') }),
      update('block', 'DELETE #k :key, #u :key', { '#k': 'k', '#u': 'u' }, { ':key': new Set(['b']) }),
      update('other', 'ADD n :d', {}, { ':d': 1 }),
    ]);
    expect(merged).toHaveLength(3);
    const [cell, block, other] = merged.map((a) => a.action.Update);
    const attribute = (u: typeof cell, name: string) => {
      const ref = Object.entries(u?.ExpressionAttributeNames ?? {}).find(([, n]) => n === name)?.[0] ?? '';
      return u?.ExpressionAttributeValues?.[ref.replace('#', ':')];
    };
    expect(cell?.UpdateExpression).toMatch(/^ADD #m0 :m0, #m1 :m1$/);
    expect((attribute(cell, 'busy:3') as NumberValue).value).toBe('-2');
    expect((attribute(cell, 'n:3') as NumberValue).value).toBe('-1');
    expect(block?.UpdateExpression).toBe('DELETE #m0 :m0, #m1 :m1');
    expect([...(attribute(block, 'k') as Set<string>)].sort()).toEqual(['a', 'b']);
    expect([...(attribute(block, 'u') as Set<string>)].sort()).toEqual(['a', 'b']);
    expect(other?.UpdateExpression).toBe('ADD n :d');
  });

  it('refuses to merge a conditioned update (a capacity check, a closed cell) rather than drop its condition', () => {
    const conditioned = update('cell', 'ADD #c0 :d0', { '#c0': 'busy:3' }, { ':d0': 1 });
    (conditioned.action.Update as { ConditionExpression?: string }).ConditionExpression =
      'attribute_not_exists(closed)';
    const plain = update('cell', 'ADD #c0 :d0', { '#c0': 'busy:3' }, { ':d0': 1 });
    expect(() => coalesce([plain, conditioned])).toThrow(/cannot be merged/);
  });
});
