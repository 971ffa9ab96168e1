import { describe, expect, it } from 'vitest';
import { LruMap } from '#lib/lru.ts';

describe('LruMap', () => {
  it('keeps at most its capacity, forgetting the least recently set first', () => {
    const map = new LruMap<string, number>(3);
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) map.set(key, i);
    expect(map.size).toBe(3);
    expect(map.has('a')).toBe(false);
    expect([map.get('b'), map.get('c'), map.get('d')]).toEqual([1, 2, 3]);
  });

  it('counts a read as a use: the entry read last survives the next insertion', () => {
    const map = new LruMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect(map.has('a')).toBe(true);
    expect(map.has('b')).toBe(false);
  });

  it('replaces a value in place without growing', () => {
    const map = new LruMap<string, number>(2);
    map.set('a', 1);
    map.set('a', 2);
    map.set('b', 3);
    expect(map.size).toBe(2);
    expect(map.get('a')).toBe(2);
  });

  it('stays bounded over many distinct keys', () => {
    const map = new LruMap<number, number>(500);
    for (let i = 0; i < 10_000; i++) map.set(i, i);
    expect(map.size).toBe(500);
    expect(map.has(9_499)).toBe(false);
    expect(map.get(9_500)).toBe(9_500);
  });

  it('refuses a capacity below one', () => {
    expect(() => new LruMap(0)).toThrow();
  });
});
