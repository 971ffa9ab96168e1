import { randomBytes } from 'node:crypto';
import { orderKeys } from '../keys.ts';

/**
 * An order key packed into 16 characters for a block's string set: creation microseconds in 9 and the number
 * in 7 digits of base 64, written with the 64 consecutive code points from '0', so packed keys sort as their
 * order keys do (fixed width, ascending alphabet) and need no decoding to be intersected.
 */
const PACK_ZERO = 0x30;
const packedDigits = (value: number, width: number): string => {
  const digits = new Array<string>(width);
  let rest = value;
  for (let i = width - 1; i >= 0; i--) {
    digits[i] = String.fromCharCode(PACK_ZERO + (rest % 64));
    rest = Math.floor(rest / 64);
  }
  return digits.join('');
};
const unpackedDigits = (packed: string, from: number, to: number): number => {
  let value = 0;
  for (let i = from; i < to; i++) value = value * 64 + (packed.charCodeAt(i) - PACK_ZERO);
  return value;
};

export function packOrderKey(orderKey: string): string {
  const { createdMicros, number } = orderKeys.parts(orderKey);
  return packedDigits(createdMicros, 9) + packedDigits(number, 7);
}

export function unpackOrderKey(packed: string): string {
  return orderKeys.of(unpackedDigits(packed, 0, 9), unpackedDigits(packed, 9, 16));
}

/**
 * An entity's uuid carries its order key, so an entity is read by uuid in one GetItem with no lookup item: an
 * RFC 9562 version 8 (custom) UUID whose 122 free bits hold the creation time in microseconds (53 bits), the
 * number (40 bits) and 29 random bits. Like a version 7 UUID it reveals when it was made.
 */
const NUMBER_BITS = 40n;
const RANDOM_BITS = 29n;

export function newOrderedUuid(createdUs: number, number: number, tag?: number): string {
  // The 29 free bits are random, or carry a small number the uuid's reader wants without a read (a deal's
  // contact id, so that a deal and its contact are read in one BatchGet).
  const random =
    tag !== undefined && Number.isInteger(tag) && tag >= 0 && tag < 2 ** 29
      ? BigInt(tag)
      : BigInt(randomBytes(4).readUInt32BE(0)) & ((1n << RANDOM_BITS) - 1n);
  const payload =
    (BigInt(createdUs) << (NUMBER_BITS + RANDOM_BITS)) | (BigInt(number) << RANDOM_BITS) | random;
  // 122 bits → 48 | version 8 | 12 | variant 0b10 | 62
  const high = payload >> 74n;
  const mid = (payload >> 62n) & 0xfffn;
  const low = payload & ((1n << 62n) - 1n);
  const value = (high << 80n) | (8n << 76n) | (mid << 64n) | (2n << 62n) | low;
  const hex = value.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The order key such a uuid names, or undefined for a string that is not such a uuid. */
export function orderKeyOfUuid(uuid: string): string | undefined {
  const parts = uuidParts(uuid);
  return parts && orderKeys.of(parts.createdMicros, parts.number);
}

/** What newOrderedUuid wrote into a uuid: creation time, number and the 29 free bits (its tag, if any). */
export function uuidParts(uuid: string): { createdMicros: number; number: number; tag: number } | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(uuid)) return undefined;
  const value = BigInt(`0x${uuid.replaceAll('-', '')}`);
  const high = value >> 80n;
  const mid = (value >> 64n) & 0xfffn;
  const low = value & ((1n << 62n) - 1n);
  const payload = (high << 74n) | (mid << 62n) | low;
  const createdUs = payload >> (NUMBER_BITS + RANDOM_BITS);
  const number = (payload >> RANDOM_BITS) & ((1n << NUMBER_BITS) - 1n);
  if (createdUs > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return {
    createdMicros: Number(createdUs),
    number: Number(number),
    tag: Number(payload & ((1n << RANDOM_BITS) - 1n)),
  };
}
