import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local.ts';
import { STORE_WORKERS } from './store-workers.ts';

/**
 * Starts AWS's DynamoDB Local in memory, one per worker of a store tier (store-workers.ts), each on a free port,
 * for the tiers that need a store (vitest.config.ts). Workers inherit TEST_STORE_ENDPOINTS (every store);
 * require-dynamodb.ts points each worker at its own store and makes each test file a table of its own there
 * (file-table.ts), so every test talks to the real thing and no worker waits behind another's load. When the api and system tiers
 * run together (`npm test`), each runs this setup: the first starts the stores, the second uses the same ones,
 * and the last teardown stops them.
 *
 * The run's synthesized stages (test/support/synth.ts) live alongside: a folder made here, named to the workers by
 * TEST_SYNTH_DIR, emptied when watch mode runs the tests again (the stack's code may have changed) and removed
 * with the stores.
 */
interface SharedStore {
  ready: Promise<string[]>;
  users: number;
  stop: () => Promise<void>;
  synthFolder: string;
}

const shared = globalThis as { deskpipeTestStore?: SharedStore };

async function start(): Promise<{ endpoints: string[]; stop: () => Promise<void> }> {
  if (process.env.DYNAMODB_ENDPOINT && process.env.DESKPIPE_TEST_EXTERNAL_DB !== '1') {
    // A developer's own DYNAMODB_ENDPOINT (from npm start) must not receive test data.
    delete process.env.DYNAMODB_ENDPOINT;
  }
  // An external store (DESKPIPE_TEST_EXTERNAL_DB=1) serves every worker.
  if (process.env.DYNAMODB_ENDPOINT)
    return { endpoints: [process.env.DYNAMODB_ENDPOINT], stop: async () => {} };
  // Each serves its worker's files for the whole run (minutes of steady load): the JVM's full JIT pays its compile
  // time back there. Measured back to back on this 2-core machine (6 December 2026): the api tier 494.8 s of CPU
  // (its two stores 269 s) with the first tier only, 460.3 s (245 s) with the full JIT; the sweeps 425.2 s and 387.5 s.
  const stores = await Promise.all(
    Array.from({ length: STORE_WORKERS }, () => startDynamoDbLocal({ port: 0, jit: 'full' })),
  );
  return {
    endpoints: stores.map((store) => store.endpoint),
    stop: async () => {
      await Promise.all(stores.map((store) => store.stop()));
    },
  };
}

export default async function setup(project: TestProject) {
  if (!shared.deskpipeTestStore) {
    let stop: () => Promise<void> = async () => {};
    const ready = start().then((started) => {
      stop = started.stop;
      return started.endpoints;
    });
    const synthFolder = mkdtempSync(join(tmpdir(), 'deskpipe-synth-'));
    shared.deskpipeTestStore = { ready, users: 0, stop: () => stop(), synthFolder };
  }
  const store = shared.deskpipeTestStore;
  store.users++;
  process.env.TEST_SYNTH_DIR = store.synthFolder;
  project.onTestsRerun(() => {
    for (const file of readdirSync(store.synthFolder)) rmSync(join(store.synthFolder, file), { force: true });
  });
  const endpoints = await store.ready;
  process.env.TEST_STORE_ENDPOINTS = endpoints.join(',');
  process.env.DYNAMODB_ENDPOINT = endpoints[0];
  return async () => {
    if (--store.users > 0) return;
    shared.deskpipeTestStore = undefined;
    rmSync(store.synthFolder, { recursive: true, force: true });
    await store.stop();
  };
}
