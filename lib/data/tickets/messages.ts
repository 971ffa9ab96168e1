import { messageKeys } from '../keys.ts';
import { outboxAttributes } from '../outbox.ts';
import { getItem, queryAll, tableName } from '../store/client.ts';
import { ConcurrentWrite } from '../store/errors.ts';
import { entityOf } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * Messages in the store (docs/data-model.md, "Messages"): an item per message in its ticket's partition, keyed by
 * its number in the ticket. A message is written as an attached action of its ticket's commit (the ticket's
 * version guard orders the messages of a ticket: two messages cannot take one number), never alone.
 */

/** A stored message as the store keeps it: the domain's fields (lib/tickets/messages/message.ts, Message). */
export interface MessageRecord {
  id: string;
  number: number;
  ticketUuid: string;
  [field: string]: unknown;
}

/**
 * The Put of a new message, for its ticket's commit: its number must be free (it is, under the version guard).
 * `mailDueAt`: the message is also a mail to send (an agent's reply e-mailed to the requester), in the outbox
 * from its commit on, due then (lib/data/outbox.ts).
 */
export function messagePut(accountId: string, message: MessageRecord, mailDueAt?: number): CommitAction {
  const key = messageKeys.message(accountId, message.ticketUuid, message.number);
  return {
    what: 'message',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...key,
          type: 'message',
          ...message,
          ...(mailDueAt === undefined ? {} : outboxAttributes(accountId, key, 'reply', mailDueAt)),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    refused: () => new ConcurrentWrite(),
  };
}

/** The message with this number in the ticket's conversation (one GetItem), or undefined. */
export async function getMessageItem<M>(
  accountId: string,
  ticketUuid: string,
  number: number,
): Promise<M | undefined> {
  const item = await getItem(messageKeys.message(accountId, ticketUuid, number));
  return item && entityOf<M>(item);
}

/**
 * Up to `count` messages of the ticket numbered after `afterNumber`, oldest first: one range of the ticket's
 * partition (one round trip per 1 MB of bodies), whatever the conversation's length.
 */
export async function queryMessages<M>(
  accountId: string,
  ticketUuid: string,
  afterNumber: number,
  count: number,
): Promise<M[]> {
  if (count <= 0) return [];
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': messageKeys.partition(accountId, ticketUuid),
        ':after': messageKeys.sort(afterNumber),
      },
      ConsistentRead: true,
    },
    count,
  );
  return items.map((item) => entityOf<M>(item));
}

/**
 * Up to `count` messages of the ticket numbered before `beforeNumber`, newest first: one range of the ticket's
 * partition read backwards (the outbox's In-Reply-To and References, whatever the conversation's length).
 */
export async function queryMessagesBefore<M>(
  accountId: string,
  ticketUuid: string,
  beforeNumber: number,
  count: number,
): Promise<M[]> {
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk < :before',
      ExpressionAttributeValues: {
        ':pk': messageKeys.partition(accountId, ticketUuid),
        ':before': messageKeys.sort(beforeNumber),
      },
      ScanIndexForward: false,
      ConsistentRead: true,
    },
    count,
  );
  return items.map((item) => entityOf<M>(item));
}
