import { ALL, type IndexDeclaration, isQueue, type StatsFamily, singleOf } from './declaration.ts';
import { isQueueDimension, queueOf } from './dimensions.ts';

/**
 * The stats cells of an entity's index (docs/data-model.md, "Counters and stats cells are sharded"), as its
 * declaration gives them: the families, the cell each attribute is kept in, the attributes' names, and which
 * dimensions are counted there.
 */

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
  if (isQueueDimension(counted.dim)) {
    const { queue, parts } = queueOf(declaration, counted.dim);
    const by = queue?.countedIn?.by;
    if (!queue?.countedIn) throw new Error(`${declaration.entity}: ${counted.dim} is counted by a counter`);
    const part = by ? parts.find((p) => p.startsWith(`${by}#`)) : undefined;
    return { family: queue.countedIn.family, value: part ? part.slice(by?.length ?? 0).slice(1) : '' };
  }
  const hash = counted.dim.indexOf('#');
  const name = counted.dim.slice(0, hash);
  const found = singleOf(declaration, name);
  return found?.countedIn
    ? { family: found.countedIn, value: counted.dim.slice(hash + 1) }
    : { family: COUNTS, value: '' };
}

/** Every family of stats cells the declaration keeps, `counts` first. */
export function statsFamilies<E>(declaration: IndexDeclaration<E, unknown>): StatsFamily[] {
  const all = [
    COUNTS,
    ...declaration.dimensions.flatMap((d) => (!isQueue(d) && d.bounded && d.countedIn ? [d.countedIn] : [])),
    ...declaration.dimensions.flatMap((d) => (isQueue(d) && d.countedIn ? [d.countedIn.family] : [])),
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

/**
 * Dimensions counted in stats cells: `all`, the bounded dimensions' values, and the queues declared `countedIn`
 * (the others have a counter of their own).
 */
export function isStatsDimension<E>(declaration: IndexDeclaration<E, unknown>, dim: string): boolean {
  if (dim === ALL) return true;
  if (isQueueDimension(dim)) return queueOf(declaration, dim).queue?.countedIn !== undefined;
  const name = dim.slice(0, dim.indexOf('#'));
  return declaration.dimensions.some((d) => !isQueue(d) && d.bounded && d.name === name);
}

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
