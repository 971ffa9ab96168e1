import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { authorizerEntry, routes } from '#functions/routes.ts';
import { BUNDLING } from '#infra/constructs/deskpipe-function.ts';
import { ROOT } from '#infra/local/environment.ts';
import { median, round } from './stats.ts';

/**
 * Each function bundled with the stack's esbuild settings, its size, and the time a fresh Node process takes
 * to load it, as a ratio to a bundle holding only the DynamoDB document client.
 */
export interface ColdStart {
  name: string;
  bytes: number;
  loadMs: number;
  loadRatio: number;
}

async function bundle(entry: string, outfile: string): Promise<number> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: BUNDLING.target,
    minify: BUNDLING.minify,
    sourcemap: BUNDLING.sourceMap,
    mainFields: BUNDLING.mainFields,
    banner: { js: BUNDLING.banner },
    alias: BUNDLING.alias,
    absWorkingDir: ROOT,
    logLevel: 'silent',
  });
  return statSync(outfile).size;
}

/** Milliseconds a fresh Node process takes to import the bundle. */
function loadTime(file: string): number {
  const script = `const t=performance.now();await import(${JSON.stringify(file)});process.stdout.write(String(performance.now()-t));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, TABLE_NAME: 'bench', AWS_REGION: 'eu-west-1' },
  });
  return Number(out.toString());
}

export async function measureColdStarts(
  root: string,
  runs: number,
): Promise<{ baseline: ColdStart; functions: ColdStart[] }> {
  const dir = join(tmpdir(), `deskpipe-bundles-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const entries = [
    { name: 'baseline (document client only)', entry: join(root, 'bench/baseline-entry.ts') },
    { name: 'authorizer', entry: join(root, authorizerEntry) },
    ...routes.map((r) => ({ name: r.name, entry: join(root, r.entry) })),
  ];
  const bundles: { name: string; file: string; bytes: number; samples: number[] }[] = [];
  for (const { name, entry } of entries) {
    const file = join(dir, `${name.split(' ')[0]}.mjs`);
    bundles.push({ name, file, bytes: await bundle(entry, file), samples: [] });
  }
  // Runs are interleaved (every bundle once per round) so that drift in machine load hits all alike.
  for (let round = 0; round < runs; round++) {
    for (const b of bundles) b.samples.push(loadTime(b.file));
  }
  const results: ColdStart[] = bundles.map((b) => ({
    name: b.name,
    bytes: b.bytes,
    loadMs: median(b.samples),
    loadRatio: 1,
  }));
  const [baseline, ...functions] = results as [ColdStart, ...ColdStart[]];
  for (const f of functions) f.loadRatio = round(f.loadMs / baseline.loadMs);
  baseline.loadMs = round(baseline.loadMs);
  for (const f of functions) f.loadMs = round(f.loadMs);
  return { baseline, functions };
}
