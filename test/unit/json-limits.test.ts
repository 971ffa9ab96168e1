import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '#lib/http/idempotency.ts';
import {
  checkJsonContentType,
  checkJsonDepth,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
} from '#lib/http/json-limits.ts';

/** The limits a JSON body meets before it is parsed (lib/http/json-limits.ts), and the canonical form of a body. */
describe('nesting depth', () => {
  it('counts objects and arrays, not brackets inside strings', () => {
    expect(nestsDeeperThan('{"a":[{"b":1}]}', 3)).toBe(false);
    expect(nestsDeeperThan('{"a":[{"b":1}]}', 2)).toBe(true);
    expect(nestsDeeperThan('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(nestsDeeperThan('{"a":"\\"[[[["}', 1)).toBe(false);
    expect(nestsDeeperThan('[[],[],[],[]]', 2)).toBe(false);
  });

  it('agrees with the depth of any JSON value', () => {
    const depthOf = (value: unknown): number =>
      value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.nat(7), (value, max) => {
        expect(nestsDeeperThan(JSON.stringify(value), max)).toBe(depthOf(value) > max);
      }),
    );
  });

  it(`refuses ${MAX_JSON_DEPTH + 1} levels with a 400 and takes ${MAX_JSON_DEPTH}`, () => {
    const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(() => checkJsonDepth(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => checkJsonDepth(nested(MAX_JSON_DEPTH + 1))).toThrow(
      expect.objectContaining({ statusCode: 400 }),
    );
  });
});

describe('content type', () => {
  it.each([
    'application/json',
    'Application/JSON ; charset=UTF-8',
    'application/json; charset="utf-8"',
    'application/json;charset=utf8',
    'application/vnd.api+json; charset=utf-8',
    'application/json; boundary=x',
  ])('takes %s', (header) => {
    expect(() => checkJsonContentType(header)).not.toThrow();
  });

  it.each([
    ['text/plain', 'The request body must be sent with Content-Type: application/json.'],
    ['', 'The request body must be sent with Content-Type: application/json.'],
    ['application/jsonp', 'The request body must be sent with Content-Type: application/json.'],
    [
      'application/json; charset=latin1',
      'The request body must be UTF-8: charset "latin1" is not supported.',
    ],
    [
      'application/json; charset=utf-16',
      'The request body must be UTF-8: charset "utf-16" is not supported.',
    ],
    ['application/json; charset=', 'The request body must be UTF-8: charset "" is not supported.'],
    [
      'application/json; charset=utf-8; charset=us-ascii',
      'The request body must be UTF-8: charset "us-ascii" is not supported.',
    ],
  ])('refuses %j with a 415', (header, message) => {
    expect(() => checkJsonContentType(header)).toThrow(expect.objectContaining({ statusCode: 415, message }));
  });
});

describe('canonicalJson', () => {
  /** The recursive form it replaced, as the reference for values of ordinary depth. */
  const recursive = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(recursive).join(',')}]`;
    if (value !== null && typeof value === 'object') {
      const entries = Object.keys(value)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${recursive((value as Record<string, unknown>)[k])}`);
      return `{${entries.join(',')}}`;
    }
    return JSON.stringify(value) ?? 'null';
  };

  it('writes what the recursive form wrote', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), (value) => {
        expect(canonicalJson(value)).toBe(recursive(value));
      }),
    );
    expect(canonicalJson(JSON.parse('{"b":[1,{"d":2,"c":null}],"a":"x","__proto__":1}'))).toBe(
      '{"__proto__":1,"a":"x","b":[1,{"c":null,"d":2}]}',
    );
  });

  it('takes a value 100,000 levels deep without running out of stack', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(() => recursive(deep)).toThrow(RangeError);
    expect(canonicalJson(deep)).toBe(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
  });
});
