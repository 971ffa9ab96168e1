/**
 * `npm test`: typecheck, lint and every tier, in the least wall time this machine allows (docs/testing.md, "How
 * `npm test` runs"). The system tier's serial part (processes, stores killed, real-time bounds: one file at a
 * time) mostly waits: alone it used one of the two cores. So it starts at once, in a vitest of its own, beside the
 * parallel tiers (unit, api and the sweeps, two files at once) and the typecheck and the lint. The checks' and the
 * serial part's output is held and printed after the parallel tiers', so each run reads as one report; the exit
 * code is the worst of all.
 *
 * Run by the Node the project brings (type stripping, no loader): node test/support/run-tiers.ts.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

interface Finished {
  code: number;
  seconds: number;
}

const root = join(dirname(new URL(import.meta.url).pathname), '..', '..');
const vitest = join(root, 'node_modules', '.bin', 'vitest');
const started = Date.now();
/**
 * V8's compile cache for every Node process of the run (vitest's workers, tsc, the `npm start` the system tests
 * start): each sweep and serial file runs in a fresh worker that loads the same modules (the AWS SDK, the handlers;
 * the api tier's files share one per worker), and without the cache each compiles them again. Measured on 20 api files: 78.6 s of user CPU without it, 69-71 s
 * with it (the first files fill it; a fresh clone starts empty). Kept under node_modules: never committed.
 */
const compileCache =
  process.env.NODE_COMPILE_CACHE ?? join(root, 'node_modules', '.cache', 'node-compile-cache');
const seconds = () => Math.round((Date.now() - started) / 1000);

/** A command of the project's own bins, its output to this terminal or to `logFile`. */
function run(
  command: string,
  args: string[],
  logFile?: string,
): { done: Promise<Finished>; stop: () => void } {
  const child = spawn(command, args, {
    stdio: logFile ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    env: {
      ...process.env,
      NODE_COMPILE_CACHE: compileCache,
      ...(logFile ? { FORCE_COLOR: process.stdout.isTTY ? '1' : '0' } : {}),
    },
  });
  if (logFile) {
    const log = createWriteStream(logFile);
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
  }
  const done = new Promise<Finished>((resolve) => {
    child.on('error', () => resolve({ code: 1, seconds: seconds() }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), seconds: seconds() }));
  });
  return { done, stop: () => child.kill('SIGTERM') };
}

const folder = mkdtempSync(join(tmpdir(), 'deskpipe-tiers-'));
const serialLog = join(folder, 'system.log');
const serial = run(vitest, ['run', '--project', 'system'], serialLog);
const parallel = run(vitest, ['run', '--project', 'unit', '--project', 'api', '--project', 'system-sweeps']);

/**
 * The typecheck and the lint beside the tests, not before them: one core's work that filled ~30 s of wall before
 * the first test file started, where the tests leave a core idle now and then (a file waiting on its store, the
 * last files of a part). Their output is held and printed after the tests'; either failing stops the tests.
 */
const checks = (async () => {
  const logs: string[] = [];
  for (const [name, args] of [
    ['typecheck', ['run', '--silent', 'typecheck']],
    ['lint', ['run', '--silent', 'lint']],
  ] as const) {
    const log = join(folder, `${name}.log`);
    const { code } = await run('npm', [...args], log).done;
    logs.push(`\n── npm run ${name}: ${code === 0 ? 'passed' : 'FAILED'} ──\n${readFileSync(log, 'utf8')}`);
    if (code !== 0) return { code, logs };
  }
  return { code: 0, logs };
})();
const checked = await checks;
if (checked.code !== 0) {
  parallel.stop();
  serial.stop();
}
const [tested, system] = await Promise.all([parallel.done, serial.done]);

for (const log of checked.logs) process.stdout.write(log);
process.stdout.write(
  `\n── the system tier's serial part (vitest --project system), run beside the rest ──\n`,
);
process.stdout.write(readFileSync(serialLog, 'utf8'));
rmSync(folder, { recursive: true, force: true });
process.stdout.write(
  `\nnpm test: typecheck and lint ${checked.code === 0 ? 'passed' : 'FAILED'}; ` +
    `unit, api and sweeps ${tested.code === 0 ? 'passed' : 'FAILED'} (done at ${tested.seconds} s); ` +
    `the system tier's serial part ${system.code === 0 ? 'passed' : 'FAILED'} (done at ${system.seconds} s)\n`,
);
process.exit(checked.code || tested.code || system.code);
