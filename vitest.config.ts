import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { LongestTiersFirst } from './test/support/sequencer.ts';
import { STORE_WORKERS } from './test/support/store-workers.ts';

// A test file outside the tier folders would be run by no tier: refuse to start rather than skip it silently.
const untiered = readdirSync(new URL('./test', import.meta.url), {
  recursive: true,
  encoding: 'utf8',
}).filter((path) => path.endsWith('.test.ts') && !/^(unit|api|system)\//.test(path));
if (untiered.length > 0) {
  throw new Error(
    `test files outside test/unit, test/api and test/system (docs/testing.md): ${untiered.join(', ')}`,
  );
}

const storeTier = {
  // DynamoDB Local is started once for the run, one per worker (shared by the tiers); every test file gets its own
  // accounts.
  globalSetup: ['test/support/global-setup.ts'],
  setupFiles: [
    'test/support/file-env.ts',
    'test/support/require-dynamodb.ts',
    'test/support/table-actions-setup.ts',
  ],
};

/**
 * The tests' store timeout: an attempt may take up to the request's deadline (8.5 s), not the deployed 2 s. On a
 * loaded 2-core machine DynamoDB Local takes 1.5 to 3.3 s for a transaction of 50 to 70 items that takes 0.3 s alone
 * (a per-call log of a full api-tier run: test/api/erasures-keys.test.ts's commits); at 2 s the SDK aborted and sent
 * it again, adding load, until the request answered 503. Connecting likewise: at 1 s a connection to a busy store timed
 * out (197 of 201 503s counted in two side-by-side runs). The production value stays where a test makes the store
 * slow on purpose: it sets its own (test/system/start-warm-up.test.ts), or starts `npm start` as a process
 * (test/support/service.ts), which runs with the deployed 2 s as a developer's would.
 */
const testStoreTimeout = { DYNAMODB_REQUEST_TIMEOUT_MS: '8000', DYNAMODB_CONNECT_TIMEOUT_MS: '8000' };

/**
 * Two sweeps run in the serial part instead of beside the api tier: `npm test`'s parallel part ended ~100 s after
 * the serial part (a fresh clone, 57039c6: 552 s and 452 s), a core idle meanwhile. These two (~35 s each, in-process,
 * every test with its own timeout) move that work to the serial part's worker (docs/testing.md, "How `npm test`
 * runs").
 */
const SERIAL_SWEEPS = [
  'test/system/sweeps/events-faults.test.ts',
  'test/system/sweeps/account-growth.test.ts',
];

/**
 * Three tiers (docs/testing.md says which test goes where): `npm run test:unit`, `test:api`, `test:system`;
 * `npm test` runs them all. What every tier shares is set here once.
 */
export default defineConfig({
  test: {
    // The erasure's recheck waits this long for the indexes: DynamoDB Local's are never behind.
    env: { LOG_LEVEL: 'silent', AWS_REGION: 'local', ERASURE_INDEX_SETTLE_MS: '10' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The sweeps' long files first, then the api and unit tiers' (test/support/sequencer.ts says why).
    sequence: { sequencer: LongestTiersFirst },
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // Pure functions: the files of a worker share one module graph instead of a fresh process each
          // (measured: 23 s of CPU for the tier isolated, 12 s shared). A file that changes the environment or
          // the clock puts it back (vi.unstubAllEnvs, useManualClock's own hooks).
          isolate: false,
          // The unit and api tiers and the system tier's sweeps run together, two files at once (each worker its
          // own store and table: test/support/require-dynamodb.ts), the longest files first; the rest of the
          // system tier (processes, stores killed, timing bounds) one file at a time, after them in one vitest
          // run, beside them under `npm test` (test/support/run-tiers.ts says why). On 2 cores a serial run left
          // a core idle (load ~1.2).
          sequence: { groupOrder: 0 },
          // The api tier's count: vitest refuses two counts in one group.
          maxWorkers: STORE_WORKERS,
          include: ['test/unit/**/*.test.ts'],
          // No store: the data layer's client points nowhere, and any call it makes fails the test saying so.
          env: { DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', TABLE_NAME: 'no-store-in-the-unit-tier' },
          setupFiles: ['test/support/no-store.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'api',
          include: ['test/api/**/*.test.ts'],
          // The files of a worker share one module graph, as the unit tier's do: a fresh process a file loaded the
          // AWS SDK, the handlers and vitest again each time. Measured on this 2-core machine, the whole api tier
          // (122 files, 949 tests) back to back: 764.7 s of CPU and 423 s of wall isolated, 500.6 s and 291 s so
          // (docs/testing.md, "How `npm test` runs"). What a file changes is put back before the next: its
          // environment (test/support/file-env.ts), its table (file-table.ts; the data layer reads TABLE_NAME at
          // each call), the IAM actions recorded (table-actions-setup.ts); a file that needs its own module graph
          // resets the modules itself (logging, request-log-keys).
          isolate: false,
          env: testStoreTimeout,
          ...storeTier,
          sequence: { groupOrder: 0 },
          maxWorkers: STORE_WORKERS,
        },
      },
      {
        extends: true,
        test: {
          // The system tier's in-process sweeps (every store call failed in turn, property and fuzz runs, loads and
          // races): no process, no real-time bound, so two at once, each worker on its own store.
          name: 'system-sweeps',
          include: ['test/system/sweeps/**/*.test.ts'],
          exclude: SERIAL_SWEEPS,
          // Loads and races of hundreds of requests: a test's own bound, when it has one, is on what it counts;
          // 30 s of wall is passed by a 1,000-agent race beside a second test run (two side-by-side runs, load
          // 11-14: three sweeps timed out at 30 s, one at its 120 s, each passing alone in a third of it).
          testTimeout: 240_000,
          env: testStoreTimeout,
          ...storeTier,
          sequence: { groupOrder: 0 },
          maxWorkers: STORE_WORKERS,
        },
      },
      {
        extends: true,
        test: {
          // The rest of the system tier (processes, stores killed, real-time bounds and waits), one file at a time.
          name: 'system',
          include: ['test/system/**/*.test.ts'],
          exclude: readdirSync(new URL('./test/system/sweeps', import.meta.url), {
            recursive: true,
            encoding: 'utf8',
          })
            .map((path) => `test/system/sweeps/${path}`)
            .filter((path) => path.endsWith('.test.ts') && !SERIAL_SWEEPS.includes(path)),
          env: testStoreTimeout,
          ...storeTier,
          sequence: { groupOrder: 1 },
          maxWorkers: 1,
        },
      },
    ],
  },
});
