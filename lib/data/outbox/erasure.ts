import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { outboxKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { senderHash } from './acks.ts';
import { deliveryOf, OUTBOX_ATTR as O } from './item.ts';
import { suppressionKey } from './suppressions.ts';

/** The outbox's part of erasing a person (docs/decisions.md, "Erasing a person"): their mail and their address. */

/**
 * An erasure's rewrite of an outbox item (a reply's message item or an acknowledgement) of a person being erased
 * (docs/decisions.md, "Erasing a person"): a mail still queued is taken out of the outbox (its delivery `failed`,
 * error `erased`: it is never sent to an address that is gone); a mail a runner is sending right now (a live
 * claim) is not touched: OutboxBusy, and the erasure's step is tried again once the claim is recorded or ran out.
 * Items that were never in the outbox are answered as they are.
 */
export function withdrawnFromOutbox(
  item: Record<string, unknown>,
  nowMs = nowMillis(),
): Record<string, unknown> {
  if (item[O.kind] === undefined || !String(item.gsi2pk ?? '').startsWith('EMAIL_DUE#')) return item;
  if (typeof item[O.until] === 'number' && (item[O.until] as number) >= nowMs) throw new OutboxBusy();
  const { gsi2pk: _pk, gsi2sk: _sk, [O.owner]: _owner, [O.until]: _until, ...rest } = item;
  const email = (item.email ?? {}) as Record<string, unknown>;
  return {
    ...rest,
    email: { ...email, delivery: { ...deliveryOf(item), status: 'failed' } },
    [O.error]: 'erased',
  };
}

/** A mail of an erased person's ticket is being sent (a live claim): the erasure's step waits for its outcome. */
export class OutboxBusy extends Error {
  constructor() {
    super('a mail of the ticket being erased is being sent; the erasure step is tried again');
  }
}

/**
 * The condition that an outbox item is as the erasure read it: still where it was in the outbox (or still out
 * of it) and with the same delivery status, so a claim, an outcome or a bounce landing meanwhile cancels the
 * erasure's Put (the step is tried again and reads it anew). Undefined for items never in the outbox.
 */
export function outboxUnchanged(before: Record<string, unknown>) {
  if (before[O.kind] === undefined) return undefined;
  const status = deliveryOf(before).status;
  return {
    condition:
      (before.gsi2sk === undefined ? 'attribute_not_exists(gsi2sk)' : 'gsi2sk = :outboxSk') +
      ' AND #outboxEmail.#outboxDelivery.#outboxStatus = :outboxStatus',
    names: { '#outboxEmail': 'email', '#outboxDelivery': 'delivery', '#outboxStatus': 'status' },
    values: {
      ...(before.gsi2sk === undefined ? {} : { ':outboxSk': before.gsi2sk }),
      ':outboxStatus': status,
    },
  };
}

/**
 * What the outbox keeps of an address (docs/decisions.md, "Erasing a person"): its suppression (sort key: the
 * address's keyed hash) and its acknowledgement counters (sort key: the keyed hash of the address without its
 * `+tag`, `base`, and the hour: one Query finds them) deleted. Answers how many items went.
 */
export async function eraseAddressOutbox(accountId: string, address: string, base: string): Promise<number> {
  const { Attributes } = await dynamo.send(
    new DeleteCommand({
      TableName: tableName(),
      Key: suppressionKey(accountId, address),
      ReturnValues: 'ALL_OLD',
    }),
  );
  let removed = Attributes ? 1 : 0;
  const partition = outboxKeys.ackRate(accountId, '', 0).pk;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :hash)',
        ExpressionAttributeValues: { ':pk': partition, ':hash': `${senderHash(accountId, base)}#` },
        ProjectionExpression: 'pk, sk',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: { pk: item.pk, sk: item.sk } }));
      removed++;
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return removed;
}
