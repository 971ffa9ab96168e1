import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { indexedEntity } from '#lib/data/index/engine.ts';
import { newOrderedUuid } from '#lib/data/index/order-key.ts';
import { addDecimal } from '#lib/decimal.ts';

/**
 * The proof that a second entity costs a declaration, not a copy: a toy entity declared here (two dimensions,
 * a count, an exact sum, one search field) gets exact lists, totals, versioned updates and a reindex from the engine that
 * tickets use, with no change to the engine. Its lists are compared with an in-memory model after random
 * creates and updates.
 */
interface Task {
  uuid: string;
  number: number;
  createdMicros: number;
  state: 'todo' | 'doing' | 'done';
  owner: string;
  points: number;
  /** Hours, in tenths: summed per owner exactly (ten tasks of 0.1 are 1 hour). */
  hours: number;
  title: string;
}

interface TaskFilter {
  state?: Task['state'];
  owner?: string;
}

const OWNER_CELLS = { family: 'owner', sharded: true };

const tasks = indexedEntity<Task, TaskFilter>({
  entity: 'TOYTASK',
  order: (t) => ({ createdMicros: t.createdMicros, number: t.number }),
  dimensions: [
    { name: 'state', values: (t) => [t.state], bounded: true },
    { name: 'owner', values: (t) => [t.owner], bounded: false },
  ],
  // Unfinished tasks per owner, as tickets count an agent's open work.
  statsCounters: {
    unfinished: { adds: (t) => (t.state === 'done' ? {} : { [t.owner]: 1 }), in: OWNER_CELLS },
    hours: { adds: (t) => ({ [t.owner]: t.hours }), in: OWNER_CELLS },
  },
  search: (t) => ({ prefixes: [...new Set(t.title.toLowerCase().split(/\s+/).filter(Boolean))] }),
  filter: (f) => ({ state: f.state ? [f.state] : [], owner: f.owner ? [f.owner] : [] }),
});

const STATES = ['todo', 'doing', 'done'] as const;
const OWNERS = ['ann', 'bob', 'cy'];
const WORDS = ['alpha', 'beta', 'gamma', 'alpine'];

/** The model's own reading of the declaration: filters AND-combined, every search word a prefix of a title word. */
function modelPage(all: Task[], filter: TaskFilter, words: string[]): Task[] {
  return all
    .filter(
      (t) =>
        (filter.state === undefined || t.state === filter.state) &&
        (filter.owner === undefined || t.owner === filter.owner),
    )
    .filter((t) =>
      words.every((w) =>
        t.title
          .toLowerCase()
          .split(/\s+/)
          .some((tw) => tw.startsWith(w)),
      ),
    )
    .sort((a, b) => b.createdMicros - a.createdMicros || b.number - a.number);
}

const taskArb = fc.record({
  state: fc.constantFrom(...STATES),
  owner: fc.constantFrom(...OWNERS),
  points: fc.integer({ min: 0, max: 8 }),
  hours: fc.integer({ min: 0, max: 30 }).map((tenths) => tenths / 10),
  title: fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }).map((w) => w.join(' ')),
});

describe('a toy entity on the index engine', () => {
  it('gets exact lists, totals, counters and updates from its declaration alone', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(taskArb, { minLength: 3, maxLength: 25 }),
        fc.array(fc.tuple(fc.nat(), taskArb), { maxLength: 25 }),
        async (created, updates) => {
          const accountId = randomUUID();
          const model = new Map<string, { task: Task; version: number }>();
          const start = 1_700_000_000_000_000;
          for (const [i, fields] of created.entries()) {
            const number = i + 1;
            // Some share a creation time: the number breaks the tie, as for tickets.
            const createdMicros = start + Math.floor(i / 2) * 1000;
            const task: Task = {
              uuid: newOrderedUuid(createdMicros, number),
              number,
              createdMicros,
              ...fields,
            };
            await tasks.create(accountId, task);
            model.set(task.uuid, { task, version: 1 });
          }
          for (const [pick, fields] of updates) {
            const current = [...model.values()][pick % model.size] as { task: Task; version: number };
            const after = { ...current.task, ...fields };
            const version = await tasks.update(accountId, {
              before: current.task,
              after,
              version: current.version,
            });
            expect(version).toBe(current.version + 1);
            model.set(after.uuid, { task: after, version });
          }
          const all = [...model.values()].map((m) => m.task);

          const shapes = [undefined, ...STATES].flatMap((state) =>
            [undefined, ...OWNERS].flatMap((owner) =>
              [[], ['al'], ['alp', 'g']].map((words) => ({
                filter: { ...(state ? { state } : {}), ...(owner ? { owner } : {}) },
                words,
              })),
            ),
          );
          await Promise.all(
            shapes.map(async ({ filter, words }) => {
              const expected = modelPage(all, filter, words);
              const page = await tasks.findPage(accountId, { filter, words, offset: 1, limit: 4 });
              const label = JSON.stringify({ filter, words });
              expect(page.total, label).toBe(expected.length);
              expect(
                page.entities.map((t) => t.uuid),
                label,
              ).toEqual(expected.slice(1, 5).map((t) => t.uuid));
            }),
          );
          const unfinished: Record<string, number> = {};
          for (const t of all) if (t.state !== 'done') unfinished[t.owner] = (unfinished[t.owner] ?? 0) + 1;
          const hours: Record<string, string> = {};
          for (const t of all) hours[t.owner] = addDecimal(hours[t.owner] ?? '0', t.hours);
          const stats = await tasks.stats(accountId);
          for (const owner of OWNERS) {
            expect(stats.counters.hours?.[owner] ?? 0, owner).toBe(Number(hours[owner] ?? 0));
          }
          expect(
            Object.fromEntries(Object.entries(stats.counters.unfinished ?? {}).filter(([, n]) => n > 0)),
          ).toEqual(unfinished);
          for (const { task, version } of model.values()) {
            expect(await tasks.getByUuid(accountId, task.uuid)).toEqual({ entity: task, version });
          }
          // A stale version is refused and changes nothing.
          const [first] = model.values();
          if (first && first.version > 1) {
            await expect(
              tasks.update(accountId, {
                before: first.task,
                after: { ...first.task, points: 99 },
                version: first.version - 1,
              }),
            ).rejects.toThrow(/changed since it was read/);
          }
          // The reindex rebuilds the same index (it may drop counters at 0 and emptied blocks): every page answers
          // as before, and a second rebuild finds nothing to remove.
          const rebuilt = await tasks.rebuild(accountId);
          expect(rebuilt.entities).toBe(all.length);
          await Promise.all(
            shapes.map(async ({ filter, words }) => {
              const page = await tasks.findPage(accountId, { filter, words, offset: 0, limit: 100 });
              expect(page.entities.map((t) => t.uuid)).toEqual(
                modelPage(all, filter, words).map((t) => t.uuid),
              );
            }),
          );
          expect((await tasks.rebuild(accountId)).removed).toBe(0);
        },
      ),
      { numRuns: 5 },
    );
  }, 120_000);
});
