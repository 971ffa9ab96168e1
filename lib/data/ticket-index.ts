import { createHash, randomBytes } from 'node:crypto';
import { customFieldText, type Ticket, type TicketFilter } from '#lib/tickets/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import { ticketKeys } from './keys.ts';

/**
 * How tickets are indexed: the dimensions a ticket is listed under (each has a posting list, newest first, and
 * an exact counter) and its order key. Only the data layer knows these; the domain speaks of tickets and
 * filters. See docs/data-model.md, "Tickets".
 */
export const dimension = {
  all: 'all',
  status: (status: string) => `status#${status}`,
  priority: (priority: string) => `priority#${priority}`,
  assignee: (id: number) => `assignee#${id}`,
  email: (email: string) => `email#${email.toLowerCase()}`,
  customField: (key: string, text: string) => `cf#${key}#${compactValue(text)}`,
  /**
   * A queue: two or three of status, priority and assignee together (an agent's open tickets, the urgent open
   * ones). Its own posting list and counter make such a page O(per_page) and its total one item.
   */
  queue: (status: string | undefined, priority: string | undefined, assigneeId: number | undefined) =>
    [
      'queue',
      ...(status ? [`s=${status}`] : []),
      ...(priority ? [`p=${priority}`] : []),
      ...(assigneeId !== undefined ? [`a=${assigneeId}`] : []),
    ].join('#'),
};

/**
 * A key holds at most 2,048 bytes, and a custom field value up to 1,024 characters (4 KB in UTF-8): long values
 * are named in keys by their SHA-256 instead, which matches exactly the same tickets. A short value that looks
 * like such a name is hashed too, so that no value is ever named like the hash of another.
 */
const MAX_VALUE_BYTES_IN_KEY = 512;
const HASHED = 'sha256:';
function compactValue(text: string): string {
  if (Buffer.byteLength(text, 'utf8') <= MAX_VALUE_BYTES_IN_KEY && !text.startsWith(HASHED)) return text;
  return `${HASHED}${createHash('sha256').update(text).digest('hex')}`;
}

/** Every dimension a ticket is listed under; `all` lists every ticket. */
export function dimensionsOf(ticket: Ticket): string[] {
  const { status, priority } = ticket;
  const agent = ticket.assignee?.id;
  return [
    dimension.all,
    dimension.status(status),
    dimension.priority(priority),
    dimension.queue(status, priority, undefined),
    ...(agent !== undefined
      ? [
          dimension.assignee(agent),
          dimension.queue(status, undefined, agent),
          dimension.queue(undefined, priority, agent),
          dimension.queue(status, priority, agent),
        ]
      : []),
    dimension.email(ticket.requester.email),
    ...Object.entries(ticket.customFields).map(([key, value]) =>
      dimension.customField(key, customFieldText(value)),
    ),
  ];
}

/**
 * The dimensions a filter names (none: every ticket). Two or three of status, priority and assignee are one
 * queue dimension, not two or three to intersect.
 */
export function filterDimensions(q: TicketFilter): string[] {
  const queueParts = [q.status, q.priority, q.assigneeId].filter((x) => x !== undefined).length;
  const queue =
    queueParts >= 2
      ? [dimension.queue(q.status, q.priority, q.assigneeId)]
      : [
          ...(q.status ? [dimension.status(q.status)] : []),
          ...(q.priority ? [dimension.priority(q.priority)] : []),
          ...(q.assigneeId !== undefined ? [dimension.assignee(q.assigneeId)] : []),
        ];
  return [
    ...queue,
    ...(q.requesterEmail !== undefined ? [dimension.email(q.requesterEmail)] : []),
    ...q.customFields.map(([key, text]) => dimension.customField(key, text)),
  ];
}

/** Dimensions whose counter lives in the account's ticket-stats item (bounded in number). */
export function isStatsDimension(d: string): boolean {
  return d === 'all' || d.startsWith('status#') || d.startsWith('priority#') || d.startsWith('assignee#');
}

/** A ticket's order key: its creation time and number (newest first, the reference breaking ties). */
export function orderKeyOf(ticket: Pick<Ticket, 'createdAt' | 'number'>): string {
  return ticketKeys.orderKey(parseTimestamp(ticket.createdAt), ticket.number);
}

/**
 * The dimensions that keep packed blocks beside their postings: every one but `all` (which is never
 * intersected: no filter means the ticket partition itself).
 */
export const hasBlocks = (d: string): boolean => d !== dimension.all;

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
  const { createdMicros, number } = ticketKeys.orderKeyParts(orderKey);
  return packedDigits(createdMicros, 9) + packedDigits(number, 7);
}

export function unpackOrderKey(packed: string): string {
  return ticketKeys.orderKey(unpackedDigits(packed, 0, 9), unpackedDigits(packed, 9, 16));
}

/**
 * A ticket's uuid carries its order key, so a ticket is read by uuid in one GetItem with no lookup item: an
 * RFC 9562 version 8 (custom) UUID whose 122 free bits hold the creation time in microseconds (53 bits), the
 * ticket number (40 bits) and 29 random bits. Like a version 7 UUID it reveals when it was made.
 */
const NUMBER_BITS = 40n;
const RANDOM_BITS = 29n;

export function newTicketUuid(createdUs: number, number: number): string {
  const random = BigInt(randomBytes(4).readUInt32BE(0)) & ((1n << RANDOM_BITS) - 1n);
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

/** The order key a ticket uuid names, or undefined for a string that is not such a uuid. */
export function orderKeyOfUuid(uuid: string): string | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(uuid)) return undefined;
  const value = BigInt(`0x${uuid.replaceAll('-', '')}`);
  const high = value >> 80n;
  const mid = (value >> 64n) & 0xfffn;
  const low = value & ((1n << 62n) - 1n);
  const payload = (high << 74n) | (mid << 62n) | low;
  const createdUs = payload >> (NUMBER_BITS + RANDOM_BITS);
  const number = (payload >> RANDOM_BITS) & ((1n << NUMBER_BITS) - 1n);
  if (createdUs > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return ticketKeys.orderKey(Number(createdUs), Number(number));
}
