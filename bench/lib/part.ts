import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { ROOT } from '#infra/local/environment.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { instrument } from '#test/support/dynamo-figures.ts';
import { type Floor, measureFloor } from './floor.ts';
import { log } from './measure.ts';
import { round } from './stats.ts';

/**
 * One part of the bench (the whole suite, or `--deals`, `--events`, `--webhooks` alone), run the same way: the
 * store client counted, the floor (single calls on the same store: what a request costs at least), the part's own
 * measurements, then its results file under bench/ with what every results file starts with. The keys keep their
 * order (`startedAt`, `finishedAt`, `mode`, `machine`, the `preface`, `floor`, the part's own): report.ts and
 * the committed files read them so.
 */
/** Where a run's results files go (git-ignored). */
export const RUNS = join(ROOT, 'bench', 'runs');

export interface Part<R extends Record<string, unknown>> {
  /** The results file's name in bench/runs/ (and in bench/, once published). */
  file: string;
  mode: string;
  endpoint: string;
  /** Calls of each operation the floor times. */
  floorCalls: number;
  /** What the file holds between `machine` and `floor` (the webhooks part: the code measured). */
  preface?: Record<string, unknown>;
  measure: (floor: Floor) => Promise<R>;
}

export async function runPart<R extends Record<string, unknown>>(part: Part<R>) {
  const startedAt = new Date().toISOString();
  instrument(dynamo);
  log('floor: single DynamoDB operations on the same store');
  const floor = await measureFloor(part.endpoint, part.floorCalls);
  const measured = await part.measure(floor);
  const results = {
    startedAt,
    finishedAt: new Date().toISOString(),
    mode: part.mode,
    machine: machine(),
    ...part.preface,
    floor,
    ...measured,
  };
  // A run never touches what git tracks: its results go to bench/runs/ (ignored); `npm run bench:publish`
  // copies them over the committed files that docs/ cite, on purpose.
  mkdirSync(RUNS, { recursive: true });
  const file = join(RUNS, part.file);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  log(`results written to ${relative(ROOT, file)}`);
  return results;
}

function machine() {
  return {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    memoryGb: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    store: 'DynamoDB Local 1.25.1 (in memory)',
  };
}
