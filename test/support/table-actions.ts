import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { authorizerEntry, authorizerTableActions, holdsKeyHashSecret, routes } from '#functions/routes.ts';
import { workers } from '#functions/workers.ts';

/**
 * DynamoDB Local ignores IAM, so a function calling an action its role lacks passes every test and fails
 * only in AWS. This records, per function (a route's name, or "authorizer"), the IAM actions its DynamoDB
 * calls need, so that test/support/table-actions-setup.ts can compare them with the route table's grants.
 */
export type UsedActions = Map<string, Set<string>>;

/** Every function of the route table: its name, entry file and the table actions it is granted. */
export const tableFunctions = [
  ...routes.map((r) => ({
    name: r.name,
    entry: r.entry,
    granted: [
      ...r.tableActions,
      ...(('indexQueries' in r ? r.indexQueries : undefined) ?? []).map((index) => `Query on index ${index}`),
    ],
  })),
  { name: 'authorizer', entry: authorizerEntry, granted: authorizerTableActions },
  // The functions that are not routes: a Query on an index is granted by name (bindIndexQueries).
  ...workers.map((w) => ({
    name: w.name,
    entry: w.entry,
    granted: [...w.tableActions, ...w.indexQueries.map((index) => `Query on index ${index}`)],
  })),
];

export const grantedActions: Record<string, readonly string[]> = Object.fromEntries(
  tableFunctions.map((fn) => [fn.name, fn.granted]),
);

/** What the functions used during this test file (each file runs in a fresh module graph). */
export const usedActions: UsedActions = new Map();

const runningFunction = new AsyncLocalStorage<string>();

/** Runs `handler` as the function `name`: DynamoDB calls made on its behalf are recorded under that name. */
export function asFunction<A extends unknown[], R>(name: string, handler: (...args: A) => R) {
  return (...args: A): R => runningFunction.run(name, () => handler(...args));
}

type Input = Record<string, unknown>;

const TRANSACT_WRITE_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

/**
 * The IAM actions one call needs: a transaction needs the action of each of its items; a call on an index
 * needs a grant on the index, which no function has (bindTable grants the table only).
 */
export function iamActionsOf(commandName: string, input: Input): string[] {
  const operation = commandName.replace(/Command$/, '');
  if (operation === 'TransactWriteItems') {
    return (input.TransactItems as Input[]).flatMap((item) =>
      Object.keys(item).map((kind) => TRANSACT_WRITE_ACTIONS[kind] ?? `TransactWriteItems ${kind}`),
    );
  }
  if (operation === 'TransactGetItems') return (input.TransactItems as unknown[]).map(() => 'GetItem');
  if (typeof input.IndexName === 'string') return [`${operation} on index ${input.IndexName}`];
  return [operation];
}

/** Records into usedActions the actions of every call that `client` sends while a function runs. */
export function recordTableActions(client: DynamoDBDocumentClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = runningFunction.getStore();
      if (name) {
        const actions = usedActions.get(name) ?? new Set();
        for (const action of iamActionsOf(String(context.commandName), args.input as Input))
          actions.add(action);
        usedActions.set(name, actions);
      }
      return next(args);
    },
    { step: 'initialize', name: 'tableActionsRecorder' },
  );
}

/** "function: action" for each recorded action that the function's grants (by function name) lack. */
export function undeclaredActions(used: UsedActions, granted: Record<string, readonly string[]>): string[] {
  return [...used].flatMap(([name, actions]) =>
    [...actions].filter((a) => !granted[name]?.includes(a)).map((a) => `${name}: ${a}`),
  );
}

/**
 * The key-hash secret (lib/accounts/key-hash.ts) is given to the functions the declarations name: in a deployed
 * function without it, a keyed hash throws. The functions that took a keyed hash during this file (an API key's, an
 * address's, an index key's: lib/data/index/keyed.ts), recorded by the wrappers of table-actions-setup.ts.
 */
export const keyHashUsers = new Set<string>();

/** The functions given the secret: the authorizer, and the routes and workers whose declarations say so. */
export const keyHashHolders = new Set([
  'authorizer',
  ...routes.filter(holdsKeyHashSecret).map((r) => r.name),
  ...workers.filter((w) => w.keyHashSecret).map((w) => w.name),
]);

/** Wraps a keyed hash so that the function running it (if any) is recorded in keyHashUsers. */
export function recordingKeyHash<A extends unknown[], R>(hash: (...args: A) => R) {
  return (...args: A): R => {
    const name = runningFunction.getStore();
    if (name) keyHashUsers.add(name);
    return hash(...args);
  };
}
