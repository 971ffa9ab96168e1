import {
  ALL,
  type DimensionDeclaration,
  type IndexDeclaration,
  isQueue,
  type QueueDeclaration,
  singleOf,
} from './declaration.ts';
import { keyedValue } from './keyed.ts';

/**
 * The dimensions of an entity's index as keys name them, from its declaration: an entity's, a filter's, a
 * queue's; which are keyed by the account's hash, which keep blocks.
 */

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
  return `${QUEUE_PREFIX}${tags.join('#')}`;
}

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

/** Whether a dimension is a queue (`queue#s=open#p=high`), named by queueName. */
export const isQueueDimension = (dim: string): boolean => dim.startsWith(QUEUE_PREFIX);
const QUEUE_PREFIX = 'queue#';

/**
 * The dimensions that keep packed blocks beside their postings: the bounded ones' values (a status, a priority,
 * an agent) and those of an unbounded dimension declared `blocks` (a custom field's value, an organization); not
 * `all`, the queues, nor a narrow unbounded value (a requester's address: intersected from its postings,
 * intersection.ts, wholeKeys; 2 write units a create less). A queue is read by its postings alone (its own page,
 * its own counter); where it is intersected with anything else its parts are (queueParts), whose blocks every
 * entity of the queue is in already. Blocks of a queue cost every create of an assigned ticket 4 items (8 write
 * units) and every update moving its status, priority or agent up to 8 (issue 40).
 */
export function hasBlocks<E>(declaration: IndexDeclaration<E, unknown>, dim: string): boolean {
  if (dim === ALL || isQueueDimension(dim)) return false;
  const d = singleOf(declaration, dim.slice(0, dim.indexOf('#')));
  return d?.bounded === true || d?.blocks === true;
}

/**
 * The dimensions a queue is made of (`queue#s=open#p=high` → `status#open`, `priority#high`); any other dimension
 * as it is. Queue parts are bounded, so named by their values as they are (valueInKeys).
 */
export function queueParts<E>(declaration: IndexDeclaration<E, unknown>, dim: string): string[] {
  if (!isQueueDimension(dim)) return [dim];
  return dim
    .slice(QUEUE_PREFIX.length)
    .split('#')
    .map((tagged) => {
      const eq = tagged.indexOf('=');
      const part = declaration.dimensions.find(
        (d): d is DimensionDeclaration<E> => !isQueue(d) && d.queueTag === tagged.slice(0, eq),
      );
      if (!part) throw new Error(`${declaration.entity}: no queue part ${tagged}`);
      return dimensionName(part.name, tagged.slice(eq + 1));
    });
}

/**
 * Where a dimension's postings are kept: in its own partition, or, for a part of a queue that lists its parts
 * (QueueDeclaration.listsParts), in that queue's partitions, one for each value of every other part, whose merge
 * its list is (`status#open` → `queue#s=open#p=low` … `queue#s=open#p=urgent`).
 */
export function postingSources<E>(
  declaration: IndexDeclaration<E, unknown>,
  accountId: string,
  dim: string,
): string[] {
  const hash = dim.indexOf('#');
  const queue = listingQueue(declaration, hash < 0 ? dim : dim.slice(0, hash));
  if (!queue) return [dim];
  const name = dim.slice(0, hash);
  let combinations: [string, string][][] = [[]];
  for (const part of queue.queue) {
    const values = part === name ? [dim.slice(hash + 1)] : domainOf(declaration, part);
    combinations = combinations.flatMap((c) => values.map((v): [string, string][] => [...c, [part, v]]));
  }
  return combinations.map((parts) => queueName(declaration, accountId, parts));
}

/** Whether a dimension keeps postings of its own (not a merge of a queue's: postingSources). */
export const hasPostings = <E>(declaration: IndexDeclaration<E, unknown>, dim: string): boolean =>
  !dim.includes('#') || listingQueue(declaration, dim.slice(0, dim.indexOf('#'))) === undefined;

/** The declaration of a queue dimension (`queue#s=open#p=high` → the status × priority queue), and its parts. */
export function queueOf<E>(declaration: IndexDeclaration<E, unknown>, dim: string) {
  const parts = queueParts(declaration, dim);
  const names = parts.map((p) => p.slice(0, p.indexOf('#')));
  const queue = declaration.dimensions.find(
    (d): d is QueueDeclaration =>
      isQueue(d) && d.queue.length === names.length && d.queue.every((n) => names.includes(n)),
  );
  return { queue, parts };
}

/** Whether a dimension is a queue that lists its parts (QueueDeclaration.listsParts): it keeps their sorted postings. */
export const listsItsParts = <E>(declaration: IndexDeclaration<E, unknown>, dim: string): boolean =>
  isQueueDimension(dim) && queueOf(declaration, dim).queue?.listsParts === true;

/** The queue that lists a dimension's values (QueueDeclaration.listsParts), if one does. */
const listingQueue = <E>(declaration: IndexDeclaration<E, unknown>, name: string) =>
  declaration.dimensions.find(
    (d): d is QueueDeclaration => isQueue(d) && d.listsParts === true && d.queue.includes(name),
  );

function domainOf<E>(declaration: IndexDeclaration<E, unknown>, name: string): readonly string[] {
  const domain = singleOf(declaration, name)?.domain;
  if (!domain) throw new Error(`${declaration.entity}: queue part ${name} lists its parts but has no domain`);
  return domain;
}
