import { keyedValue } from './keyed.ts';

/**
 * An entity's index, declared as data (as the table is): the dimensions it is listed under, the queues that
 * combine some of them, its own counters and its search terms. The engine (lib/data/index/) builds the items,
 * the commits, the list plans and the reindex of any entity from its declaration; only the data layer knows
 * these, the domain speaks of entities and filters. See docs/data-model.md, "The index engine".
 */
export interface IndexDeclaration<E, F> {
  /** The entity's name in keys (`TICKET` → `TICKETS#…`, `TICKET_INDEX#…`) and, lower-cased, in item types. */
  entity: string;
  /** Creation time and per-account number: the order key (newest first) and the block an entity's keys go to. */
  order(entity: E): { createdMicros: number; number: number };
  /**
   * What an entity is listed under, in the order its index items are written (which decides, for the largest
   * entities, which of them fit in the commit). `all` lists every entity and comes first, implicitly.
   */
  dimensions: (DimensionDeclaration<E> | QueueDeclaration)[];
  /**
   * Counters beyond the dimensions' counts: name → what an entity adds to each of its values (a ticket adds 1 to
   * its agent's open work; a deal its amount to its stage's sum), and the family of cells they are kept in (a
   * cell per value). Amounts are exact decimals: numbers or decimal strings, summed by the store, never as
   * binary floats.
   */
  statsCounters?: Record<string, StatsCounter<E>>;
  /** Words an entity is found by: prefixes match any word that starts them, a number matches exactly. */
  search?(entity: E): SearchTerms;
  /** The values a list filter names, per dimension name (AND-combined; none: every entity). */
  filter(filter: F): Record<string, string[]>;
  /**
   * Dimensions whose entities a search word matches too, found elsewhere (a deal matches the words of its
   * contact's name as the contact is now: the contacts the word finds name `contact#<id>` dimensions).
   */
  searchRelated?(accountId: string, word: string, budget: number): Promise<string[]>;
  /**
   * The entity's due time (epoch microseconds; none: no entry): kept on the entity item as its entry in the
   * keys-only due index (keys.ts, indexKeys().due), so every commit of the entity moves it with the entity and a
   * runner finds what is due by Query, never by Scan (a ticket's soonest service-level due time still to watch).
   */
  due?(entity: E): number | undefined;
  /**
   * Orders a list may ask for beside newest first (`sort=due`): name → the entity's sort value, compared as a
   * string, ascending, ties newest first. Kept as sorted postings in `all` and each bounded dimension, moved in
   * the entity's own commit (keys.ts, indexKeys().sorted; list-sorted.ts reads them).
   */
  sorts?: Record<string, (entity: E) => string>;
  /** The order key a uuid names (default: the one newOrderedUuid wrote into it). */
  keyOfUuid?(uuid: string): string | undefined;
}

export interface DimensionDeclaration<E> {
  /** The dimension's name: `status` lists under `status#open`. */
  name: string;
  /** The values an entity is listed under in this dimension (none: it is not). */
  values(entity: E): string[];
  /**
   * Values known to the account (a status, an agent): counted in stats cells (see countedIn); any number (an
   * e-mail): a sharded counter in each value's posting partition. An unbounded dimension's values are text a
   * person wrote (an address, a custom field's value): keys name them by the account's keyed hash (keyed.ts),
   * never as they are, unless the dimension is `readable`.
   */
  bounded: boolean;
  /**
   * An unbounded dimension whose values are ids the service handed out (a deal's contact id), not text a person
   * wrote: named in keys as they are.
   */
  readable?: true;
  /**
   * Where a bounded dimension's counts are kept: by default with the other few-valued counts in the sharded
   * `counts` cell; a dimension with a value per agent or stage names its own family (a cell per value), so
   * that no item grows with agents or stages.
   */
  countedIn?: StatsFamily;
  /** Its tag in the name of the queues it is part of (`s` → `queue#s=open#p=high`). */
  queueTag?: string;
}

/**
 * Two or more single-valued dimensions together (an agent's open tickets): their own postings and counter make
 * such a page O(per_page) and its total one item, where intersecting would read every key of each. An entity
 * is in a queue when it has a value in every part.
 */
export interface QueueDeclaration {
  queue: string[];
}

export interface StatsCounter<E> {
  adds(entity: E): Record<string, number | string>;
  /** The family of cells its values are kept in: a cell per value. */
  in: StatsFamily;
}

/**
 * A family of stats cells: one partition of small items (docs/data-model.md, "Counters"). A sharded family
 * keeps each cell in up to COUNTER_SHARDS items, a change adding to one of them, a total summing them; an
 * unsharded one keeps a cell in one item, which a condition can then name (least-busy: an agent's open work).
 */
export interface StatsFamily {
  family: string;
  sharded: boolean;
}

/** The few-valued counts (`all`, a status, a priority): one cell, sharded. */
export const COUNTS: StatsFamily = { family: 'counts', sharded: true };

/** A stats cell: a family and a value (the `counts` cell's value is empty). */
export interface StatsCell {
  family: StatsFamily;
  value: string;
}

/** The cell an attribute (`n:status#open`, `busy:3`) is kept in. */
export function statsCellOf<E>(declaration: IndexDeclaration<E, unknown>, attribute: string): StatsCell {
  const counted = statsAttribute.parse(attribute);
  if (!counted) throw new Error(`${declaration.entity}: ${attribute} is no stats attribute`);
  if ('counter' in counted) {
    const counter = declaration.statsCounters?.[counted.counter];
    if (!counter) throw new Error(`${declaration.entity}: no counter ${counted.counter}`);
    return { family: counter.in, value: counted.value };
  }
  if (counted.dim === ALL) return { family: COUNTS, value: '' };
  const hash = counted.dim.indexOf('#');
  const name = counted.dim.slice(0, hash);
  const found = declaration.dimensions.find((d) => !isQueue(d) && d.name === name) as
    | DimensionDeclaration<E>
    | undefined;
  return found?.countedIn
    ? { family: found.countedIn, value: counted.dim.slice(hash + 1) }
    : { family: COUNTS, value: '' };
}

/** Every family of stats cells the declaration keeps, `counts` first. */
export function statsFamilies<E>(declaration: IndexDeclaration<E, unknown>): StatsFamily[] {
  const all = [
    COUNTS,
    ...declaration.dimensions.flatMap((d) => (!isQueue(d) && d.bounded && d.countedIn ? [d.countedIn] : [])),
    ...Object.values(declaration.statsCounters ?? {}).map((c) => c.in),
  ];
  const byName = new Map<string, StatsFamily>();
  for (const f of all) {
    const known = byName.get(f.family);
    if (known && known.sharded !== f.sharded)
      throw new Error(`${declaration.entity}: ${f.family} declared twice`);
    byName.set(f.family, f);
  }
  return [...byName.values()];
}

export interface SearchTerms {
  /** Terms matched by prefix (a term that is a prefix of another is left out: it adds nothing). */
  prefixes: string[];
  /** The entity's number without padding, matched exactly. */
  number?: string;
}

/** The dimension listing every entity (never intersected: no filter reads the entity partition itself). */
export const ALL = 'all';

const isQueue = <E>(d: DimensionDeclaration<E> | QueueDeclaration): d is QueueDeclaration => 'queue' in d;

/** A dimension's name with its value as keys name it: `status#open`, `cf#<keyed hash of plan#gold>`. */
export const dimensionName = (name: string, value: string) => `${name}#${value}`;

/** Whether keys name a dimension's values by the account's keyed hash: unbounded, and not `readable`. */
const isKeyed = <E>(d: DimensionDeclaration<E>): boolean => !d.bounded && d.readable !== true;

/** A dimension's value as keys name it (keyed.ts): a bounded or readable one as it is, any other by its hash. */
const valueInKeys = <E>(d: DimensionDeclaration<E>, accountId: string, value: string): string =>
  isKeyed(d) ? keyedValue(accountId, value) : value;

function queueName<E>(
  declaration: IndexDeclaration<E, unknown>,
  accountId: string,
  parts: [name: string, value: string][],
) {
  const tags = parts.map(([name, value]) => {
    const d = singleOf(declaration, name);
    if (!d?.queueTag) throw new Error(`${declaration.entity}: queue part ${name} has no queueTag`);
    return `${d.queueTag}=${valueInKeys(d, accountId, value)}`;
  });
  return ['queue', ...tags].join('#');
}

const singleOf = <E>(declaration: IndexDeclaration<E, unknown>, name: string) =>
  declaration.dimensions.find((d) => !isQueue(d) && d.name === name) as DimensionDeclaration<E> | undefined;

/** Every dimension an entity is listed under, in the declaration's order, `all` first, as keys name them. */
export function dimensionsOf<E>(
  declaration: IndexDeclaration<E, unknown>,
  accountId: string,
  entity: E,
): string[] {
  const single = new Map<string, string | undefined>();
  const out = [ALL];
  for (const d of declaration.dimensions) {
    if (isQueue(d)) {
      const parts = d.queue.map((name) => [name, single.get(name)] as [string, string | undefined]);
      if (parts.every(([, value]) => value !== undefined))
        out.push(queueName(declaration, accountId, parts as [string, string][]));
      continue;
    }
    const values = d.values(entity);
    if (d.queueTag) single.set(d.name, values[0]);
    out.push(...values.map((v) => dimensionName(d.name, valueInKeys(d, accountId, v))));
  }
  return out;
}

/**
 * The dimensions a filter names (none: every entity), as keys name them. Two or more queue parts named together
 * are their queue, when one is declared, not dimensions to intersect; the queue (or its parts) comes first, then
 * the rest in the declaration's order.
 */
export function filterDimensions<E, F>(
  declaration: IndexDeclaration<E, F>,
  accountId: string,
  filter: F,
): string[] {
  const wanted = declaration.filter(filter);
  const singles = declaration.dimensions.filter((d): d is DimensionDeclaration<E> => !isQueue(d));
  const named = (d: DimensionDeclaration<E>) =>
    (wanted[d.name] ?? []).map((v) => dimensionName(d.name, valueInKeys(d, accountId, v)));
  const queued = singles.filter((d) => d.queueTag && (wanted[d.name]?.length ?? 0) > 0);
  const names = new Set(queued.map((d) => d.name));
  const queue = declaration.dimensions.find(
    (d): d is QueueDeclaration =>
      isQueue(d) && d.queue.length === names.size && d.queue.every((n) => names.has(n)),
  );
  const first =
    queued.length >= 2 && queue
      ? [
          queueName(
            declaration as IndexDeclaration<E, unknown>,
            accountId,
            queue.queue.map((n) => [n, wanted[n]?.[0] as string]),
          ),
        ]
      : queued.flatMap(named);
  const rest = singles.filter((d) => !d.queueTag).flatMap(named);
  return [...first, ...rest];
}

/**
 * Whether keys name a dimension's values by their keyed hash (text a person wrote: an address, a custom field's
 * value). What such a dimension leaves once empty (counter shards, blocks, its directory entry) is deleted by the
 * erasure and the purge (lib/data/erasures.ts, deleteEmptyDimension), behind every container's memory of the
 * entry, so the reindex puts such entries again whatever it remembers (directory.ts, ensureDirectoryEntries).
 */
export function isKeyedDimension<E>(declaration: IndexDeclaration<E, unknown>, dim: string): boolean {
  const d = singleOf(declaration, dim.slice(0, dim.indexOf('#')));
  return d !== undefined && isKeyed(d);
}

/** Dimensions counted in stats cells: `all` and the bounded dimensions' values. */
export function isStatsDimension<E>(declaration: IndexDeclaration<E, unknown>, dim: string): boolean {
  if (dim === ALL) return true;
  const name = dim.slice(0, dim.indexOf('#'));
  return declaration.dimensions.some((d) => !isQueue(d) && d.bounded && d.name === name);
}

/** The dimensions that keep packed blocks beside their postings: every one but `all`. */
export const hasBlocks = (dim: string): boolean => dim !== ALL;

/** Attribute names in stats cells: a dimension's count (`n:status#open`), a declared counter (`busy:3`). */
export const statsAttribute = {
  count: (dim: string) => `n:${dim}`,
  counter: (name: string, value: string) => `${name}:${value}`,
  /** What an attribute of a stats cell counts: a dimension, or a declared counter's value. */
  parse: (attribute: string): { dim: string } | { counter: string; value: string } | undefined => {
    const colon = attribute.indexOf(':');
    if (colon < 0) return undefined;
    const name = attribute.slice(0, colon);
    const value = attribute.slice(colon + 1);
    return name === 'n' ? { dim: value } : { counter: name, value };
  },
};
