import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from './client.ts';
import { failedConditionsOf, isTransactionConflict, itemOnConditionFailure } from './errors.ts';

/** One action of a TransactWriteItems call (Put, Update, Delete or ConditionCheck). */
export type TransactAction = NonNullable<
  ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']
>[number];

/** An Update action of a transaction (also a valid UpdateItem input). */
export type TransactUpdate = NonNullable<TransactAction['Update']>;

/** DynamoDB's limit on the actions of one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;

/**
 * An action of a commit, named by what it writes, with what a failed condition on it means. A cancelled
 * transaction is decoded by these names, never by the position of its actions.
 */
export interface CommitAction {
  /** What the action writes (`ticket`, `stats`, `idempotency`, `contact`): how errors and tests name it. */
  what: string;
  action: TransactAction;
  /**
   * The error a failed condition of this action stands for, given the item as it was when the condition
   * failed (when the action asked for it with ReturnValuesOnConditionCheckFailure); undefined: the failure is
   * thrown as DynamoDB reported it.
   */
  refused?: (held: Record<string, unknown> | undefined) => Error | undefined;
}

/** Writes every action or none (one round trip). */
export async function transact(actions: TransactAction[]): Promise<void> {
  if (actions.length > MAX_TRANSACTION_ITEMS) {
    throw new Error(`a transaction takes at most ${MAX_TRANSACTION_ITEMS} actions, got ${actions.length}`);
  }
  await dynamo.send(new TransactWriteCommand({ TransactItems: actions }));
}

/**
 * Writes a commit: every action or none. When DynamoDB cancels it because a condition failed, the first failed
 * action (in the commit's order) that says what its failure means throws that; any other failure (a conflict,
 * the store) is thrown as it came.
 */
export async function commit(actions: CommitAction[]): Promise<void> {
  try {
    await transact(actions.map((a) => a.action));
  } catch (error) {
    // A conflict says nothing of the conditions: the caller decides again.
    if (isTransactionConflict(error)) throw error;
    throw refusalOf(error, actions) ?? error;
  }
}

/** The error that a cancelled commit's failed condition stands for, if one of its actions names it. */
export function refusalOf(error: unknown, actions: CommitAction[]): Error | undefined {
  for (const i of failedConditionsOf(error)) {
    const reason = actions[i]?.refused?.(itemOnConditionFailure(error, i));
    if (reason) {
      if (!reason.cause) Object.assign(reason, { cause: error });
      return reason;
    }
  }
  return undefined;
}
