import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { isZeroDecimal } from '#lib/decimal.ts';
import { tableName } from '../store/client.ts';
import { ConcurrentWrite } from '../store/errors.ts';
import { ATTR, type ItemKey, keyString } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import type { Index } from './items.ts';

/**
 * The actions an indexed entity's commits are made of (commit.ts, trash.ts): an index item put or deleted, a
 * counter moved, and the stats cells' part of a commit with its condition.
 */

/**
 * A condition on one stats attribute at commit time (least-busy: the chosen agent's open work is still what
 * the pick saw), put on the one item of that attribute's cell, which must be in an unsharded family: one clause,
 * whatever the account's size.
 */
export interface StatsCondition {
  /** The attribute the condition reads (`busy:3`), named `#a` in the expression. */
  attribute: string;
  expression: string;
  values: Record<string, unknown>;
}

export const put = (what: string, Item: Record<string, unknown>): CommitAction => ({
  what,
  action: { Put: { TableName: tableName(), Item } },
});
export const remove = (what: string, item: Record<string, unknown>): CommitAction => ({
  what,
  action: { Delete: { TableName: tableName(), Key: { pk: item.pk, sk: item.sk } } },
});
export const addToCounter = (key: ItemKey, delta: number): CommitAction => ({
  what: 'counter',
  action: {
    Update: {
      TableName: tableName(),
      Key: key,
      UpdateExpression: `ADD ${ATTR.count} :d`,
      ExpressionAttributeValues: { ':d': delta },
    },
  },
});

/**
 * The stats cells' part of a commit: each cell a change moves gets one UpdateItem that ADDs its deltas (+1
 * entering a count, −1 leaving it; an amount entering or leaving a sum), sent as exact decimals; a sharded
 * cell on the change's shard, an unsharded one on its item. The condition goes on its attribute's cell (a
 * ConditionCheck when the change does not move that cell). Given `closed`, a change entering a cell of a closable
 * family (adding a positive amount) is conditioned on its shard not being closed (closed-cells.ts), and refused
 * with that error if it is.
 */
export function statsActions<E>(
  index: Index<E>,
  accountId: string,
  deltas: [attribute: string, delta: string][],
  shard: number,
  condition?: StatsCondition,
  closed?: () => Error,
): CommitAction[] {
  const cells = new Map<string, { key: ItemKey; moves: [string, string][]; entering: boolean }>();
  const keyOf = (attribute: string) => {
    const { family, value } = index.statsCellOf(attribute);
    return index.keys.statsCell(accountId, family.family, value, family.sharded ? shard : undefined);
  };
  for (const [attribute, delta] of deltas) {
    if (isZeroDecimal(delta)) continue;
    const key = keyOf(attribute);
    const cell = cells.get(keyString(key)) ?? { key, moves: [], entering: false };
    cell.moves.push([attribute, delta]);
    cell.entering ||=
      closed !== undefined && index.statsCellOf(attribute).family.closable === true && !delta.startsWith('-');
    cells.set(keyString(key), cell);
  }
  const conditionKey = condition && keyOf(condition.attribute);
  if (condition && index.statsCellOf(condition.attribute).family.sharded) {
    throw new Error(`a condition needs an unsharded cell: ${condition.attribute}`);
  }
  // The stats condition (least-busy) no longer holds: decide again.
  const refused = () => new ConcurrentWrite();
  const actions: CommitAction[] = [...cells.values()].map(({ key, moves, entering }) => {
    const conditioned = condition && conditionKey && keyString(conditionKey) === keyString(key);
    // A closable family's cells are never where a stats condition goes: one refusal names one cause.
    if (conditioned && entering) throw new Error(`a condition on a closable cell: ${condition.attribute}`);
    const names: Record<string, string> = conditioned ? { '#a': condition.attribute } : {};
    const values: Record<string, unknown> = conditioned ? { ...condition.values } : {};
    if (entering) names['#closed'] = ATTR.closed;
    const adds = moves.map(([attribute, delta], i) => {
      names[`#c${i}`] = attribute;
      values[`:d${i}`] = NumberValue.from(delta);
      return `#c${i} :d${i}`;
    });
    const expression = conditioned
      ? condition.expression
      : entering
        ? 'attribute_not_exists(#closed)'
        : undefined;
    return {
      what: 'stats',
      action: {
        Update: {
          TableName: tableName(),
          Key: key,
          UpdateExpression: `ADD ${adds.join(', ')}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ...(expression ? { ConditionExpression: expression } : {}),
        },
      },
      ...(conditioned ? { refused } : entering && closed ? { refused: closed } : {}),
    };
  });
  if (condition && conditionKey && !cells.has(keyString(conditionKey))) {
    actions.push({
      what: 'stats',
      action: {
        ConditionCheck: {
          TableName: tableName(),
          Key: conditionKey,
          ConditionExpression: condition.expression,
          ExpressionAttributeNames: { '#a': condition.attribute },
          ExpressionAttributeValues: condition.values,
        },
      },
      refused,
    });
  }
  return actions;
}
