import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventText, storedEventText } from '#lib/data/events/item.ts';
import { PACK_FROM_BYTES, pack, unpack } from '#lib/data/store/packed.ts';
import { CAPACITY_DESCRIPTION } from '#test/support/capacity-shapes.ts';

describe('long texts stored packed', () => {
  it('packs a mail-like text to about half, and gives back the same bytes', () => {
    const text = Buffer.from(CAPACITY_DESCRIPTION, 'utf8');
    const packed = pack(text) as Buffer;
    expect(packed.length).toBeLessThan(text.length * 0.6);
    expect(unpack(packed).equals(text)).toBe(true);
  });

  it('leaves a short text, and one packing would not shorten, as they are', () => {
    expect(pack(Buffer.from('x'.repeat(PACK_FROM_BYTES - 1)))).toBeUndefined();
    expect(pack(randomBytes(4_000))).toBeUndefined();
  });

  it("an event's text: packed and marked when long, as it is when short; read back either way", () => {
    const long = Buffer.from(JSON.stringify({ data: { object: { description: CAPACITY_DESCRIPTION } } }));
    const stored = storedEventText(long);
    expect(stored.enc).toBe('br');
    expect(eventText({ enc: stored.enc }, stored.parts).equals(long)).toBe(true);
    const short = Buffer.from('{"id":"evt_1"}');
    const plain = storedEventText(short);
    expect(plain.enc).toBeUndefined();
    // An event written before packing (no enc) reads as it is.
    expect(eventText({}, plain.parts).equals(short)).toBe(true);
  });

  it('an event past one item: its packed bytes cut into parts, joined before unpacking', () => {
    // Hex packs to about half: 800 KB of it still needs two parts of 350 KB.
    const text = Buffer.from(JSON.stringify({ description: randomBytes(400_000).toString('hex') }));
    const stored = storedEventText(text);
    expect(stored.parts.length).toBeGreaterThan(1);
    expect(eventText({ enc: stored.enc }, stored.parts).equals(text)).toBe(true);
  });
});
