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
   * contact's name as the contact is now: the contacts the word finds name `contact#<id>` dimensions). `probed`:
   * where the keys a search's sample probe read are added (term-reads.ts).
   */
  searchRelated?(
    accountId: string,
    word: string,
    budget: number,
    probed?: { keys: number },
  ): Promise<string[]>;
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
  /**
   * Sorts kept in the named dimensions only (name → dimension names), not in `all` nor the other bounded ones: an
   * order that only one dimension's lists ask for (a team's queue: `sort=queue` in `waiting`) costs no sorted
   * posting in every other dimension of every entity. A sort not named here is kept in all of them.
   */
  sortedIn?: Record<string, readonly string[]>;
  /** The order key a uuid names (default: the one newOrderedUuid wrote into it). */
  keyOfUuid?(uuid: string): string | undefined;
  /**
   * Text fields stored packed when long (lib/data/store/packed.ts): every write of the entity's item costs its
   * size, and a ticket's item is mostly its description. Read back as they were (store/items.ts, entityOf).
   */
  packed?: readonly string[];
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
  /**
   * An unbounded dimension whose values may be broad (a custom field's value, an organization) keeps packed blocks
   * too, for intersections (dimensions.ts, hasBlocks): read whole, a broad value's postings take ~10× its blocks'
   * bytes (~170 a posting, 16 a block key; at 100,000 tickets, priority + a custom field of 30,000 read 717 ms and
   * 1,491 units from postings where 83 ms from blocks). One whose values are narrow (a requester's address) keeps
   * none: 2 write units a create less.
   */
  blocks?: true;
  /** Its tag in the name of the queues it is part of (`s` → `queue#s=open#p=high`). */
  queueTag?: string;
  /**
   * Every value of a bounded dimension in which every entity has exactly one (a ticket's status, its priority):
   * what a queue that lists its parts (QueueDeclaration.listsParts) merges a part's postings over.
   */
  domain?: readonly string[];
}

/**
 * Two or more single-valued dimensions together (an agent's open tickets): their own postings and counter make
 * such a page O(per_page) and its total one item, where intersecting would read every key of each. An entity
 * is in a queue when it has a value in every part.
 */
export interface QueueDeclaration {
  queue: string[];
  /**
   * Where the queue's counts are kept when its parts are all bounded: in stats cells of `family`, a cell per value
   * of the part `by` (an agent's queues in that agent's cell), or without `by` in the family's one cell (the
   * few-valued `counts`). A change writes those cells anyway (or one small item per agent), where a counter costs
   * it a sharded counter item for every queue it enters or leaves (issue 40). Absent: a sharded counter in the
   * queue's posting partition, as for an unbounded dimension.
   */
  countedIn?: { family: StatsFamily; by?: string } | undefined;
  /**
   * Its parts keep no postings of their own: a part's list (`status#open`) is this queue's postings merged over
   * every value of the other parts (their `domain`: `queue#s=open#p=low` … `queue#s=open#p=urgent`, one Query
   * each, in parallel; dimensions.ts, postingSources), so a change moving a part moves one posting where it moved
   * two (issue 40). The parts keep their blocks, counts and sorted postings. Every other part declares a domain.
   */
  listsParts?: true;
}

export interface StatsCounter<E> {
  adds(entity: E): Record<string, number | string>;
  /** The family of cells its values are kept in: a cell per value. */
  in: StatsFamily;
}

/**
 * A family of stats cells: one partition of small items (docs/data-model.md, "Counters and stats cells are
 * sharded"). A sharded family keeps each cell in up to COUNTER_SHARDS items, a change adding to one of them, a
 * total summing them; an unsharded one keeps a cell in one item, which a condition can then name (least-busy: an
 * agent's open work).
 */
export interface StatsFamily {
  family: string;
  sharded: boolean;
  /**
   * Its cells can be closed (closed-cells.ts: a team's deletion closes the team's cell), and a change entering a
   * closed cell is refused when its commit asks (WriteOptions.closed).
   */
  closable?: true;
}

export interface SearchTerms {
  /** Terms matched by prefix (a term that is a prefix of another is left out: it adds nothing). */
  prefixes: string[];
  /** The entity's number without padding, matched exactly. */
  number?: string;
}

/** The dimension listing every entity (never intersected: no filter reads the entity partition itself). */
export const ALL = 'all';

/** Whether a declared dimension is a queue (of single-valued dimensions) rather than a dimension of its own. */
export const isQueue = <E>(d: DimensionDeclaration<E> | QueueDeclaration): d is QueueDeclaration =>
  'queue' in d;

/** The dimension (not a queue) the declaration names so. */
export const singleOf = <E>(declaration: IndexDeclaration<E, unknown>, name: string) =>
  declaration.dimensions.find((d) => !isQueue(d) && d.name === name) as DimensionDeclaration<E> | undefined;
