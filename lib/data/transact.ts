import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from './client.ts';

/** One action of a TransactWriteItems call (Put, Update, Delete or ConditionCheck). */
export type TransactAction = NonNullable<
  ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']
>[number];

/** An Update action of a transaction (also a valid UpdateItem input). */
export type TransactUpdate = NonNullable<TransactAction['Update']>;

/** DynamoDB's limit on the actions of one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;

/** Writes every action or none (one round trip). */
export async function transact(actions: TransactAction[]): Promise<void> {
  if (actions.length > MAX_TRANSACTION_ITEMS) {
    throw new Error(`a transaction takes at most ${MAX_TRANSACTION_ITEMS} actions, got ${actions.length}`);
  }
  await dynamo.send(new TransactWriteCommand({ TransactItems: actions }));
}
