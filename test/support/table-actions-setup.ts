import { join } from 'node:path';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { ROOT } from '#infra/local/environment.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { inFaultScopeOfRequest } from './faults.ts';
import {
  asFunction,
  grantedActions,
  keyHashHolders,
  keyHashUsers,
  recordingKeyHash,
  recordTableActions,
  tableFunctions,
  undeclaredActions,
  usedActions,
} from './table-actions.ts';

/**
 * Runs before every test file (vitest setupFiles). Each function's entry module is loaded with its handler
 * wrapped by asFunction, whether the local gateway or a test imports it, and the shared DynamoDB client
 * records what each function calls. (The same wrapper serves a request sent inside a fault run in that run:
 * faults.ts, inFaultScopeOfRequest.) After the file, every action used must be in the function's
 * `tableActions` (or `authorizerTableActions`): what IAM would deny in AWS fails here. Likewise a keyed hash
 * (lib/keyed-hash.ts, lib/accounts/key-hash.ts, and the index's keyed values and terms, cached per account past their first) taken by
 * a function the declarations do not give the key-hash secret: deployed, it would throw for want of it.
 */
for (const fn of tableFunctions) {
  vi.doMock(join(ROOT, fn.entry), async (importOriginal) => {
    const module = await importOriginal<{ handler: (...args: unknown[]) => unknown }>();
    return { ...module, handler: asFunction(fn.name, inFaultScopeOfRequest(module.handler)) };
  });
}
// Once a client: a worker that runs many files in one module graph (the api tier) keeps the first file's recorder,
// and a client made again (a file that resets the modules) gets its own.
const worker = globalThis as { tableActionsClients?: WeakSet<object> };
worker.tableActionsClients ??= new WeakSet();
const recorded = worker.tableActionsClients;
if (!recorded.has(dynamo)) {
  recordTableActions(dynamo);
  recorded.add(dynamo);
}
// What this file's functions use is checked against their grants: a worker's earlier files' uses were checked after them.
beforeAll(() => {
  usedActions.clear();
  keyHashUsers.clear();
});
vi.doMock(join(ROOT, 'lib/keyed-hash.ts'), async (importOriginal) => {
  const module = await importOriginal<typeof import('#lib/keyed-hash.ts')>();
  return { ...module, keyedHash: recordingKeyHash(module.keyedHash) };
});
vi.doMock(join(ROOT, 'lib/accounts/key-hash.ts'), async (importOriginal) => {
  const module = await importOriginal<typeof import('#lib/accounts/key-hash.ts')>();
  return { ...module, hashApiKey: recordingKeyHash(module.hashApiKey) };
});
vi.doMock(join(ROOT, 'lib/data/index/keyed.ts'), async (importOriginal) => {
  const module = await importOriginal<typeof import('#lib/data/index/keyed.ts')>();
  return {
    ...module,
    keyedValue: recordingKeyHash(module.keyedValue),
    keyedTerm: recordingKeyHash(module.keyedTerm),
  };
});

afterAll(() => {
  expect(
    undeclaredActions(usedActions, grantedActions),
    'DynamoDB actions a function used without them in its tableActions (IAM would deny them in AWS)',
  ).toEqual([]);
  expect(
    [...keyHashUsers].filter((name) => !keyHashHolders.has(name)),
    'functions that took a keyed hash without the key-hash secret (functions/routes.ts holdsKeyHashSecret, workers keyHashSecret)',
  ).toEqual([]);
});
