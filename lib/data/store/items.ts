import { pack, unpack } from './packed.ts';
import { table } from './table.ts';

/**
 * Attribute names the table layout adds to items, beside the entity's own fields: their one home. Short, since
 * every index item carries them.
 */
export const ATTR = {
  /** An indexed entity's version, incremented by every update (its ETag). */
  version: 'v',
  /** An indexed entity's prefix search terms (what a marked term item is checked against). */
  terms: 't',
  /** Marks an index item or block key written before its entity's commit: it counts once its entity holds it. */
  unconfirmed: 'u',
  /** A block's packed order keys written in their entity's commit (a string set). */
  blockKeys: 'k',
  /**
   * A block's packed order keys a create added before its commit (a string set, index/pending.ts): each counts once
   * no pending item of its creation time is left, or once its entity holds it.
   */
  pendingBlockKeys: 'p',
  /** A counter item's count. */
  count: 'n',
  /** How many times erasures rewrote the item (a message, event, kept answer, inbound entry): their guard. */
  erasureRewrites: 'erw',
  /** Marks a closed stats cell's shard (index/closed-cells.ts; no `:`: no stats attribute, readers never sum it). */
  closed: 'closed',
  /** The entity's fields stored packed (a list of their names; packed.ts): entityOf gives them back as text. */
  packed: 'zp',
} as const;

/** An entity as read, with its version (ATTR.version: the number its ETag names). */
export interface Versioned<E> {
  entity: E;
  version: number;
}

/** Attributes that belong to the table layout, not to the entity stored in an item. */
const LAYOUT_ATTRIBUTES = new Set<string>([
  'pk',
  'sk',
  'type',
  'gsi1pk',
  'gsi1sk',
  'gsi2pk',
  'gsi2sk',
  table.ttlAttribute,
  ...Object.values(ATTR),
]);

/**
 * Strips the layout attributes from an item, leaving the entity as the domain knows it: its packed fields
 * (ATTR.packed) as the text they were.
 */
export function entityOf<T>(item: Record<string, unknown>): T {
  const entity: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) {
    if (!LAYOUT_ATTRIBUTES.has(name)) entity[name] = value;
  }
  const packed = item[ATTR.packed];
  if (Array.isArray(packed)) {
    for (const name of packed) {
      const value = entity[name];
      if (value instanceof Uint8Array) entity[name] = unpack(value).toString('utf8');
    }
  }
  return entity as T;
}

/**
 * An entity's attributes with the `fields` named stored packed where that shortens them (packed.ts), and
 * ATTR.packed naming those: what its item holds of it.
 */
export function packedFields(
  entity: Record<string, unknown>,
  fields: readonly string[] = [],
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...entity };
  const names: string[] = [];
  for (const name of fields) {
    const value = entity[name];
    const packed = typeof value === 'string' ? pack(Buffer.from(value, 'utf8')) : undefined;
    if (packed) {
      out[name] = packed;
      names.push(name);
    }
  }
  if (names.length > 0) out[ATTR.packed] = names;
  return out;
}

/** An item's primary key. */
export interface ItemKey {
  pk: string;
  sk: string;
}

/** An item's primary key as one string (a Map or Set key), for an item or a key alike. */
export function keyString(item: { pk?: unknown; sk?: unknown }): string {
  return `${item.pk}\u0000${item.sk}`;
}

/** Splits a list into chunks of at most `size` (BatchWrite takes 25, TransactWrite 100). */
export function chunks<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}
