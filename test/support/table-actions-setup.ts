import { join } from 'node:path';
import { afterAll, expect, vi } from 'vitest';
import { ROOT } from '#infra/local/environment.ts';
import { dynamo } from '#lib/data/client.ts';
import {
  asFunction,
  grantedActions,
  recordTableActions,
  tableFunctions,
  undeclaredActions,
  usedActions,
} from './table-actions.ts';

/**
 * Runs before every test file (vitest setupFiles). Each function's entry module is loaded with its handler
 * wrapped by asFunction, whether the local gateway or a test imports it, and the shared DynamoDB client
 * records what each function calls. After the file, every action used must be in the function's
 * `tableActions` (or `authorizerTableActions`): what IAM would deny in AWS fails here.
 */
for (const fn of tableFunctions) {
  vi.doMock(join(ROOT, fn.entry), async (importOriginal) => {
    const module = await importOriginal<{ handler: (...args: unknown[]) => unknown }>();
    return { ...module, handler: asFunction(fn.name, module.handler) };
  });
}
recordTableActions(dynamo);

afterAll(() => {
  expect(
    undeclaredActions(usedActions, grantedActions),
    'DynamoDB actions a function used without them in its tableActions (IAM would deny them in AWS)',
  ).toEqual([]);
});
