import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '#infra/local/environment.ts';
import { RUNS } from './lib/part.ts';

/**
 * `npm run bench:publish [-- results-deals.json …]`: the explicit step that makes a run's figures the ones the
 * docs cite. A run writes only to bench/runs/ (git-ignored), so benchmarking never dirties the working tree; this
 * copies the named results (default: every committed one the runs folder has) over bench/, formatted as biome
 * checks them, and when bench/results.json is among them redraws its charts in docs/ (bench/report.ts --charts).
 */
const COMMITTED = ['results.json', 'results-deals.json', 'results-events.json', 'results-webhooks.json'];
/** bench/results.json is the one committed results file biome does not check (biome.json). */
const UNFORMATTED = new Set(['results.json']);

const named = process.argv.slice(2);
const unknown = named.filter((name) => !COMMITTED.includes(name));
if (unknown.length > 0) {
  process.stderr.write(
    `not a committed results file: ${unknown.join(', ')} (one of ${COMMITTED.join(', ')})\n`,
  );
  process.exit(2);
}
const files = (named.length > 0 ? named : COMMITTED).filter((name) => existsSync(join(RUNS, name)));
if (files.length === 0) {
  process.stderr.write('nothing to publish: run npm run bench first (its results go to bench/runs/)\n');
  process.exit(2);
}
for (const name of files) {
  const target = join(ROOT, 'bench', name);
  copyFileSync(join(RUNS, name), target);
  if (!UNFORMATTED.has(name)) {
    execFileSync(join(ROOT, 'node_modules/.bin/biome'), ['format', '--write', target], { stdio: 'ignore' });
  }
  process.stdout.write(`published bench/runs/${name} → bench/${name}\n`);
}
if (files.includes('results.json')) {
  execFileSync(join(ROOT, 'node_modules/.bin/tsx'), ['bench/report.ts', 'bench/results.json', '--charts'], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  process.stdout.write('charts redrawn in docs/bench-*.svg\n');
}
