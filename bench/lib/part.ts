import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '#infra/local/environment.ts';
import { dynamo } from '#lib/data/client.ts';
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
export interface Part<R extends Record<string, unknown>> {
  /** The results file's name in bench/. */
  file: string;
  mode: string;
  endpoint: string;
  /** Calls of each operation the floor times. */
  floorCalls: number;
  /** What the file holds between `machine` and `floor` (the webhooks part: the code measured). */
  preface?: Record<string, unknown>;
  /** Committed results files are checked by biome (it ignores only bench/results.json): written as it formats. */
  formatted: boolean;
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
  const file = join(ROOT, 'bench', part.file);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  if (part.formatted)
    execFileSync(join(ROOT, 'node_modules/.bin/biome'), ['format', '--write', file], { stdio: 'ignore' });
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
