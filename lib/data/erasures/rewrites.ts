import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { bodyOf, eventText, placeItems, storedEventText } from '../events.ts';
import { eventKeys } from '../keys.ts';
import { outboxUnchanged } from '../outbox.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { ConcurrentWrite, isConditionFailure } from '../store/errors.ts';
import { ATTR, type ItemKey } from '../store/items.ts';
import { type CommitAction, commit } from '../store/transact.ts';

/**
 * The rewrites the job makes of the items that hold a copy of a person (a message, an acknowledgement, an event,
 * a kept answer, an inbound log entry): each Put on the condition that the item is as read. Nothing here decides
 * what is personal: the job hands the rewritten item, or a function that rewrites it.
 */

/**
 * The erasure rewrite counter (`erw`): every rewrite an erasure makes of an item (a message, an event, a kept
 * answer, an inbound log entry) sets it one higher, on the condition that it is still the value read. Two
 * erasures rewriting the same item (two people on one ticket, erased at once) cannot both write what they read:
 * the second one's condition fails, and it reads the item again, with the first one's redaction, and redacts that.
 */
const ERW = ATTR.erasureRewrites;

/** The condition that an item is as read (its `erw`), and the value its rewrite takes. */
function asRead(item: Record<string, unknown>): {
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
  next: number;
} {
  const read = item[ERW];
  return typeof read === 'number'
    ? { condition: '#erw = :erw', names: { '#erw': ERW }, values: { ':erw': read }, next: read + 1 }
    : {
        condition: 'attribute_exists(pk) AND attribute_not_exists(#erw)',
        names: { '#erw': ERW },
        values: {},
        next: 1,
      };
}

/**
 * The Put of an item rewritten whole, on the condition that it is as read (`before`'s `erw`, asRead) and, for a
 * mail of the outbox, that its outbox state is still the one read (outboxUnchanged): its `erw` one higher.
 */
function rewrittenPut(item: Record<string, unknown>, before: Record<string, unknown>) {
  const read = asRead(before);
  const outbox = outboxUnchanged(before);
  const values = { ...read.values, ...(outbox?.values ?? {}) };
  return {
    TableName: tableName(),
    Item: { ...item, [ERW]: read.next },
    ConditionExpression: `${read.condition}${outbox ? ` AND ${outbox.condition}` : ''}`,
    ExpressionAttributeNames: { ...read.names, ...(outbox?.names ?? {}) },
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}

/** How many times a rewrite reads an item again after a racing rewrite before the step fails (and is retried). */
const REWRITE_TRIES = 5;

/** An item as stored now (a rewrite of it raced: read again by its keys), or undefined. */
export async function readAgain(item: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
  return getItem({ pk: String(item.pk), sk: String(item.sk) });
}

/**
 * Rewrites one item (a kept answer, an inbound log entry) as `rewrite` gives it, on the condition that it is
 * still as read (its `erw`): a concurrent rewrite wins, and this one reads it again and rewrites that (at most
 * REWRITE_TRIES times, then ConcurrentWrite: the step is tried again); undefined from `rewrite`: leave it.
 * Answers whether it changed.
 */
export async function rewriteItem(
  key: ItemKey,
  rewrite: (
    item: Record<string, unknown>,
  ) => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>,
): Promise<boolean> {
  for (let tries = 0; tries < REWRITE_TRIES; tries++) {
    const item = await getItem({ pk: key.pk, sk: key.sk });
    if (!item) return false;
    const next = await rewrite(item);
    if (!next) return false;
    if (await putRewritten(next, item)) return true;
  }
  throw new ConcurrentWrite();
}

/**
 * Puts an item rewritten whole: a message (written once, changed since only by the outbox, when it is a mail:
 * then on the condition that its outbox state is still what the erasure read, lib/data/outbox.ts) or a ticket's
 * acknowledgement (likewise); always on the condition that no other erasure rewrote it since it was read (its
 * `erw`). False when a condition failed: the caller reads it again (readAgain) and rewrites that.
 */
export async function putRewritten(
  item: Record<string, unknown>,
  before: Record<string, unknown>,
): Promise<boolean> {
  try {
    await dynamo.send(new PutCommand(rewrittenPut(item, before)));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** A rewrite of an event lost to another erasure's (its head's `erw` moved): read again. */
class EventRewriteRaced extends Error {}

/**
 * Rewrites an event in place: its JSON text (head and parts) as `rewrite` gives it, cut into parts again; a part
 * no longer needed is deleted. The head's Put holds only while its `erw` is as read (another erasure's rewrite
 * landed: read again, at most REWRITE_TRIES times); an event in parts (over PART_BYTES, rare) is rewritten in one
 * transaction, head, parts and deletes, so no reader ever sees a head with another rewrite's parts. Answers
 * whether it changed. Nothing else writes an event twice.
 */
export async function rewriteEvent(
  accountId: string,
  key: ItemKey,
  rewrite: (text: string) => string | undefined,
): Promise<boolean> {
  const seq = eventKeys.parse(key.sk).seq;
  for (let tries = 0; tries < REWRITE_TRIES; tries++) {
    const items = (await placeItems(accountId, seq)).filter((i) => i.pk === key.pk);
    const head = items[0];
    if (!head || head.type !== eventKeys.itemType.event) return false;
    const text = eventText(head, items.map(bodyOf)).toString('utf8');
    const next = rewrite(text);
    if (next === undefined || next === text) return false;
    const { parts, enc } = storedEventText(Buffer.from(next, 'utf8'));
    const { parts: _oldParts, enc: _oldEnc, ...rest } = head;
    const headPut = rewrittenPut(
      {
        ...rest,
        body: parts[0],
        ...(enc ? { enc } : {}),
        ...(parts.length > 1 ? { parts: parts.length } : {}),
      },
      head,
    );
    try {
      if (parts.length === 1 && items.length === 1) {
        await dynamo.send(new PutCommand(headPut));
        return true;
      }
      await commit([
        { what: 'event', action: { Put: headPut }, refused: () => new EventRewriteRaced() },
        ...parts.slice(1).map(
          (part, i): CommitAction => ({
            what: 'event_part',
            action: {
              Put: {
                TableName: tableName(),
                Item: {
                  ...eventKeys.part(accountId, seq, i + 1),
                  pk: key.pk,
                  type: 'event_part',
                  expires_at: head.expires_at,
                  body: part,
                },
              },
            },
          }),
        ),
        ...items.slice(parts.length).map(
          (old): CommitAction => ({
            what: 'event_part',
            action: { Delete: { TableName: tableName(), Key: { pk: old.pk, sk: old.sk } } },
          }),
        ),
      ]);
      return true;
    } catch (error) {
      if (!(error instanceof EventRewriteRaced) && !isConditionFailure(error)) throw error;
    }
  }
  throw new ConcurrentWrite();
}
