import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { splitAddress } from '#lib/email/addresses.ts';
import { addressHash as keyedAddressHash } from '#lib/erasures/address-hash.ts';
import { nowMillis } from '#lib/time.ts';
import { dynamo, getItem, tableName } from './client.ts';
import { isConditionFailure } from './errors.ts';
import { type EventDraft, type EventPlaces, settleEventPlaces, takeEventPlaces } from './events.ts';
import { ALL_DUE_SHARDS, dueEntries } from './index/due.ts';
import { entityOf, type ItemKey } from './items.ts';
import { messageKeys, outboxKeys } from './keys.ts';
import { type CommitAction, commit } from './transact.ts';

/**
 * The outbox in the store (docs/email.md, "Sending"; docs/data-model.md, "E-mail"). A mail to send is an item in
 * the keys-only due index (gsi2, `EMAIL_DUE#<shard>`) until it is sent or given up: a reply's mail is its message
 * item (the entry written in the message's own commit, so a committed reply is a queued mail, whatever happens
 * next), an acknowledgement its own item. Its state is the item's `email.delivery`. A runner claims an entry
 * (conditional: queued, due, no live claim; the entry moves to the claim's end, so a runner that dies leaves it
 * due again then), sends, and records the outcome on the condition that it still holds the claim. Nothing here
 * knows SMTP, SES or MIME.
 */

export type DeliveryStatus = 'queued' | 'sent' | 'failed' | 'bounced';

/** A mail's delivery as the message shows it (`email.delivery`). */
export interface Delivery {
  status: DeliveryStatus;
  attempts: number;
  provider_message_id: string | null;
}

export const QUEUED: Delivery = { status: 'queued', attempts: 0, provider_message_id: null };

/** The item attributes that are the outbox's, not the message's: their one spelling. */
const O = {
  kind: 'outboxKind',
  owner: 'outboxOwner',
  until: 'outboxUntil',
  error: 'outboxError',
} as const;

export type OutboxKind = 'reply' | 'ack';

/** The attributes that put an item in the outbox, due at `atMs` (a message's Put adds them in its commit). */
export function outboxAttributes(accountId: string, key: ItemKey, kind: OutboxKind, atMs: number) {
  return { ...outboxKeys.due(accountId, key, atMs), [O.kind]: kind };
}

/** The outbox item of a ticket's mail: its message `number`'s (a reply), or its acknowledgement. */
export const outboxItemKey = (accountId: string, ticketUuid: string, mail: number | 'ack'): ItemKey =>
  mail === 'ack' ? outboxKeys.ack(accountId, ticketUuid) : messageKeys.message(accountId, ticketUuid, mail);

/** A due entry: the account and the item's key. */
export interface OutboxEntry {
  accountId: string;
  key: ItemKey;
}

/** Mail due at or before `nowMs`, earliest first, at most `limit`, in the given due shards (one round trip). */
export async function dueOutbox(
  nowMs: number,
  limit: number,
  shards: readonly number[] = ALL_DUE_SHARDS,
): Promise<OutboxEntry[]> {
  const entries = await dueEntries(
    {
      indexName: outboxKeys.dueIndex,
      partition: outboxKeys.duePartition,
      before: outboxKeys.dueBefore(nowMs),
    },
    limit,
    shards,
  );
  return entries.map((e) => ({
    accountId: outboxKeys.parseDue(e.gsi2sk).accountId,
    key: { pk: e.pk, sk: e.sk },
  }));
}

/** A claimed mail: the item as stored (its entity), its kind and delivery. */
export interface ClaimedMail {
  kind: OutboxKind;
  item: Record<string, unknown>;
  delivery: Delivery;
}

const deliveryOf = (item: Record<string, unknown>): Delivery =>
  ((item.email as Record<string, unknown> | undefined)?.delivery as Delivery | undefined) ?? QUEUED;

/**
 * Claims a due mail for `owner` until `untilMs`: conditional on its being queued, due and not claimed by another
 * owner's live claim (one UpdateItem); the entry moves to the claim's end. An owner takes its own live claim
 * again: `npm start` names its runner after its data folder, so after a crash it sends what it had claimed at
 * once (the same Message-ID), not when the claim ends. Undefined when another runner holds it or it is no longer
 * queued (sent, given up, purged).
 */
export async function claimOutbox(
  entry: OutboxEntry,
  owner: string,
  untilMs: number,
  nowMs = nowMillis(),
): Promise<ClaimedMail | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: entry.key,
        UpdateExpression: `SET ${O.owner} = :owner, ${O.until} = :until, gsi2sk = :sk`,
        ConditionExpression:
          'attribute_exists(gsi2sk) AND gsi2sk < :before AND #email.#delivery.#status = :queued AND ' +
          `(attribute_not_exists(${O.until}) OR ${O.until} < :now OR ${O.owner} = :owner)`,
        ExpressionAttributeNames: { '#email': 'email', '#delivery': 'delivery', '#status': 'status' },
        ExpressionAttributeValues: {
          ':owner': owner,
          ':until': untilMs,
          ':sk': outboxKeys.due(entry.accountId, entry.key, untilMs).gsi2sk,
          ':before': outboxKeys.dueBefore(nowMs),
          ':queued': 'queued',
          ':now': nowMs,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (!Attributes) return undefined;
    return {
      kind: (Attributes[O.kind] as OutboxKind) ?? 'reply',
      item: entityOf(Attributes),
      delivery: deliveryOf(Attributes),
    };
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/** The claim was lost before the outcome was written (it ran out and another runner holds the mail). */
export class ClaimLost extends Error {
  constructor() {
    super('The outbox claim was lost before its outcome was written');
  }
}

/** What one attempt makes of a mail. */
export interface OutboxOutcome {
  delivery: Delivery;
  /** Due again at this time (a temporary failure with a retry left); absent: out of the outbox. */
  nextAtMs?: number | undefined;
  /** The In-Reply-To the mail was sent with (shown as the message's `email.in_reply_to`). */
  inReplyTo?: string | null | undefined;
  /** The last failure, for the operator (not shown on the message). */
  error?: string | undefined;
  /** Written in the same commit: the Message-ID claims of a sent mail. */
  items?: CommitAction[] | undefined;
  /** Events written in the same commit (`message.delivery_failed`). */
  events?: EventDraft[] | undefined;
}

/**
 * Writes an attempt's outcome on the condition that `owner` still holds the claim: the delivery, the due entry
 * moved to the next attempt or removed, the claim released, and the outcome's items and events, in one commit.
 * A lost claim is a ClaimLost (nothing written: the holder's outcome stands).
 */
export async function recordOutbox(entry: OutboxEntry, owner: string, outcome: OutboxOutcome): Promise<void> {
  const names = { '#email': 'email', '#delivery': 'delivery' };
  const again = outcome.nextAtMs !== undefined;
  const update: CommitAction = {
    what: 'outbox',
    action: {
      Update: {
        TableName: tableName(),
        Key: entry.key,
        UpdateExpression:
          `SET #email.#delivery = :delivery, ${O.error} = :error` +
          (again ? ', gsi2sk = :sk' : '') +
          (outcome.inReplyTo ? ', #email.#irt = :irt' : '') +
          ` REMOVE ${O.owner}, ${O.until}` +
          (again ? '' : ', gsi2pk, gsi2sk'),
        ConditionExpression: `${O.owner} = :owner`,
        ExpressionAttributeNames: { ...names, ...(outcome.inReplyTo ? { '#irt': 'in_reply_to' } : {}) },
        ExpressionAttributeValues: {
          ':delivery': outcome.delivery,
          ...(outcome.inReplyTo ? { ':irt': outcome.inReplyTo } : {}),
          ':error': outcome.error ?? null,
          ':owner': owner,
          ...(again
            ? { ':sk': outboxKeys.due(entry.accountId, entry.key, outcome.nextAtMs as number).gsi2sk }
            : {}),
        },
      },
    },
    refused: () => new ClaimLost(),
  };
  let places: EventPlaces | undefined;
  try {
    if (outcome.events?.length) places = await takeEventPlaces(entry.accountId, outcome.events);
    await commit([update, ...(outcome.items ?? []), ...(places?.actions ?? [])]);
  } catch (error) {
    if (places) await settleEventPlaces(places.accountId, places.seqs);
    throw error;
  }
}

/**
 * A bounce of a sent mail: its delivery becomes `bounced` (only a mail that was sent or is queued; a failed one
 * stays failed), with its events, in one commit. Answers false when the item is gone or was not sent.
 */
export async function markBounced(
  accountId: string,
  key: ItemKey,
  before: Delivery,
  events: EventDraft[],
): Promise<boolean> {
  const update: CommitAction = {
    what: 'outbox',
    action: {
      Update: {
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET #email.#delivery = :delivery REMOVE gsi2pk, gsi2sk',
        ConditionExpression: '#email.#delivery.#status = :sent',
        ExpressionAttributeNames: { '#email': 'email', '#delivery': 'delivery', '#status': 'status' },
        ExpressionAttributeValues: { ':delivery': { ...before, status: 'bounced' }, ':sent': 'sent' },
      },
    },
    refused: () => new ClaimLost(),
  };
  let places: EventPlaces | undefined;
  try {
    if (events.length > 0) places = await takeEventPlaces(accountId, events);
    await commit([update, ...(places?.actions ?? [])]);
    return true;
  } catch (error) {
    if (places) await settleEventPlaces(places.accountId, places.seqs);
    if (error instanceof ClaimLost) return false;
    throw error;
  }
}

/** An item of the outbox as stored (strongly consistent), or undefined. */
export async function getOutboxItem(key: ItemKey): Promise<ClaimedMail | undefined> {
  const item = await getItem({ ...key });
  if (!item) return undefined;
  return { kind: (item[O.kind] as OutboxKind) ?? 'reply', item: entityOf(item), delivery: deliveryOf(item) };
}

/** An operator's view of one mail: its delivery, due time, claim and last error. */
export async function outboxState(key: ItemKey) {
  const item = await getItem({ ...key });
  if (!item) return undefined;
  return {
    delivery: deliveryOf(item),
    due: item.gsi2sk === undefined ? null : outboxKeys.parseDue(String(item.gsi2sk)).dueMs,
    claimedBy: (item[O.owner] as string | undefined) ?? null,
    error: (item[O.error] as string | null | undefined) ?? null,
  };
}

/** Acknowledgements to one sender within one hour, at most (decisions.md, "The e-mail channel"). */
export const ACKS_PER_SENDER_HOUR = 10;

/** Why an acknowledgement was not queued. */
export class AckRefused extends Error {
  constructor(readonly reason: 'already' | 'capped') {
    super(`acknowledgement not queued: ${reason}`);
  }
}

/**
 * A sender's name in their acknowledgement counters' sort keys: the keyed hash (lib/erasures/address-hash.ts) of
 * the address without its `+tag`, so `victim+1@` and `victim+2@` share one cap (decisions.md, "The e-mail
 * channel"); never an unkeyed hash, which anyone could compute from a guessed address ("Erasing a person").
 */
const addressHash = (accountId: string, address: string) =>
  keyedAddressHash(accountId, splitAddress(address).base).slice(0, 40);

/**
 * Queues a ticket's acknowledgement (`mail`: what the runner sends) at most once per ticket and at most
 * ACKS_PER_SENDER_HOUR per sender per hour: its Put (conditional on none for the ticket) and the sender's hour
 * counter (conditional on being under the cap) in one transaction. Throws AckRefused otherwise.
 */
export async function queueAck(
  accountId: string,
  ticketUuid: string,
  to: string,
  mail: Record<string, unknown>,
  nowMs = nowMillis(),
): Promise<void> {
  const key = outboxKeys.ack(accountId, ticketUuid);
  const hour = Math.floor(nowMs / 3_600_000);
  await commit([
    {
      what: 'ack',
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...key,
            type: 'email_ack',
            ...outboxAttributes(accountId, key, 'ack', nowMs),
            ticketUuid,
            ...mail,
            email: { ...(mail.email as Record<string, unknown>), delivery: QUEUED },
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      refused: () => new AckRefused('already'),
    },
    {
      what: 'ack_rate',
      action: {
        Update: {
          TableName: tableName(),
          Key: outboxKeys.ackRate(accountId, addressHash(accountId, to), hour),
          UpdateExpression: 'ADD n :one SET expires_at = :expires',
          ConditionExpression: 'attribute_not_exists(n) OR n < :max',
          ExpressionAttributeValues: {
            ':one': 1,
            ':max': ACKS_PER_SENDER_HOUR,
            ':expires': (hour + 2) * 3600,
          },
        },
      },
      refused: () => new AckRefused('capped'),
    },
  ]);
}

/** The suppression item of an address: by its keyed hash (docs/data-model.md), the address itself nowhere. */
const suppressionKey = (accountId: string, address: string) =>
  outboxKeys.suppressed(accountId, keyedAddressHash(accountId, address));

/** Marks an address that bounced: the account sends it nothing more until it writes in again. */
export async function suppressAddress(accountId: string, address: string, reason: string): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...suppressionKey(accountId, address),
        type: 'email_suppressed',
        reason,
        at: nowMillis(),
      },
    }),
  );
}

/** Whether the account sends nothing to the address (one GetItem). */
export async function isSuppressed(accountId: string, address: string): Promise<boolean> {
  return (await getItem(suppressionKey(accountId, address))) !== undefined;
}

/**
 * The address wrote in again: the account may send to it again. One eventually consistent GetItem (0.5 read
 * unit; every received mail pays it), and a DeleteItem only when the address was suppressed.
 */
export async function liftSuppression(accountId: string, address: string): Promise<void> {
  if (!(await getItem(suppressionKey(accountId, address), { eventual: true }))) return;
  try {
    await dynamo.send(
      new DeleteCommand({
        TableName: tableName(),
        Key: suppressionKey(accountId, address),
        ConditionExpression: 'attribute_exists(pk)',
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

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

/** Whether a stored item is (or was) a mail of the outbox: a reply's message item or an acknowledgement. */
export const isOutboxItem = (item: Record<string, unknown>) => item[O.kind] !== undefined;

/** A ticket's acknowledgement item as stored (strongly consistent; with its keys), or undefined. */
export const ackItem = (accountId: string, ticketUuid: string) =>
  getItem(outboxKeys.ack(accountId, ticketUuid));

/**
 * What the outbox keeps of an address (docs/decisions.md, "Erasing a person"): its suppression (sort key: the
 * address's keyed hash) and its acknowledgement counters (sort key: the keyed hash of the address without its
 * `+tag`, and the hour: one Query finds them) deleted. Answers how many items went.
 */
export async function eraseAddressOutbox(accountId: string, address: string): Promise<number> {
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
        ExpressionAttributeValues: { ':pk': partition, ':hash': `${addressHash(accountId, address)}#` },
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
