import { dynamo } from '#lib/data/store/client.ts';
import { table } from '#lib/data/store/table.ts';

/**
 * DynamoDB's transaction conflicts, given back to DynamoDB Local. On DynamoDB a TransactWriteItems call is
 * cancelled (TransactionCanceledException, reason `TransactionConflict` on each contested action) when another
 * transaction in flight holds one of its items, and a PutItem, UpdateItem or DeleteItem of an item that a
 * transaction in flight holds is refused with TransactionConflictException. DynamoDB Local instead makes the
 * second one wait, so a hot item there costs time but never a conflict, and figures measured on it say nothing
 * of the retries and 503s a hot item causes on DynamoDB.
 *
 * This middleware on the service's own client (where test/support/faults.ts injects its faults: inside the
 * 503 mapping, outside the SDK's retries) holds every item of a transaction from the moment it is sent until its
 * answer is back, and refuses as DynamoDB would any transaction or single-item write that touches a held item.
 * A transaction's hold is its whole round trip to DynamoDB Local, which is longer than DynamoDB's own hold (its
 * two-phase commit inside the service): conflicts measured with this wrapper are an upper bound for a given
 * rate. Not modelled: TransactGetItems (the service sends none) and BatchWriteItem (bulk loaders only).
 */
export interface ConflictCounts {
  /** TransactWriteItems calls sent to the store. */
  transactions: number;
  /** TransactWriteItems calls cancelled because another transaction in flight held one of their items. */
  cancelled: number;
  /** PutItem, UpdateItem and DeleteItem calls refused because a transaction in flight held their item. */
  writesRefused: number;
  /** Per item (`[table, pk, sk]` as JSON), how many cancellations and refusals it caused: where the contention is. */
  contested: Map<string, number>;
}

const NAME = 'transactionConflicts';
const SINGLE_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

type Input = Record<string, unknown>;
type Action = Partial<Record<'Put' | 'Update' | 'Delete' | 'ConditionCheck', Input>>;

/** An item's identity: its table and primary key. */
function itemId(tableName: unknown, keyOrItem: Input | undefined): string {
  const key = keyOrItem ?? {};
  return JSON.stringify([tableName, key[table.partitionKey], key[table.sortKey]]);
}

function actionItem(action: Action): string {
  if (action.Put) return itemId(action.Put.TableName, action.Put.Item as Input);
  const keyed = action.Update ?? action.Delete ?? action.ConditionCheck ?? {};
  return itemId(keyed.TableName, keyed.Key as Input);
}

function singleWriteItem(input: Input): string {
  return itemId(input.TableName, (input.Key ?? input.Item) as Input);
}

function cancelled(reasons: string[]): Error {
  return Object.assign(
    new Error(`Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons}]`),
    {
      name: 'TransactionCanceledException',
      CancellationReasons: reasons.map((Code) => ({ Code })),
      $metadata: { httpStatusCode: 400 },
    },
  );
}

function refused(): Error {
  return Object.assign(new Error('Transaction is ongoing for the item'), {
    name: 'TransactionConflictException',
    $metadata: { httpStatusCode: 400 },
  });
}

/**
 * Installs the wrapper on the service's client until `uninstall()`; the counts grow while it is installed.
 * One at a time per process.
 */
export function cancelConflictingTransactions(): { counts: ConflictCounts; uninstall: () => void } {
  const counts: ConflictCounts = { transactions: 0, cancelled: 0, writesRefused: 0, contested: new Map() };
  const contest = (item: string) => counts.contested.set(item, (counts.contested.get(item) ?? 0) + 1);
  /** Every item held by a transaction in flight. */
  const held = new Set<string>();
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Input;
      if (context.commandName === 'TransactWriteItemsCommand') {
        counts.transactions++;
        const items = ((input.TransactItems as Action[] | undefined) ?? []).map(actionItem);
        if (items.some((item) => held.has(item))) {
          counts.cancelled++;
          for (const item of items) if (held.has(item)) contest(item);
          throw cancelled(items.map((item) => (held.has(item) ? 'TransactionConflict' : 'None')));
        }
        for (const item of items) held.add(item);
        try {
          return await next(args);
        } finally {
          for (const item of items) held.delete(item);
        }
      }
      if (SINGLE_WRITES.has(String(context.commandName)) && held.has(singleWriteItem(input))) {
        counts.writesRefused++;
        contest(singleWriteItem(input));
        throw refused();
      }
      return next(args);
    },
    { step: 'initialize', name: NAME, priority: 'low' },
  );
  return { counts, uninstall: () => void dynamo.middlewareStack.remove(NAME) };
}
