import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { type EventDraft, type EventPlaces, settleEventPlaces, takeEventPlaces } from '../events.ts';
import { type DueCursors, dueWindow } from '../index/due.ts';
import { outboxKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import type { ItemKey } from '../store/items.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { type ClaimedMail, type Delivery, mailOf, OUTBOX_ATTR as O } from './item.ts';

/** Sending from the outbox: the mail due read, claimed, its attempt's outcome recorded, a bounce marked. */

/** A due entry: the account and the item's key. */
export interface OutboxEntry {
  accountId: string;
  key: ItemKey;
}

/**
 * Mail due at or before `nowMs`, earliest first: the runner's window, in each of the given due shards a page from
 * where its last window ended (lib/data/index/due.ts, dueWindow; one round trip).
 */
export async function dueOutbox(
  nowMs: number,
  shards: readonly number[],
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: OutboxEntry[]; more: boolean }> {
  const window = await dueWindow(
    {
      indexName: outboxKeys.dueIndex,
      partition: outboxKeys.duePartition,
      before: outboxKeys.dueBefore(nowMs),
    },
    shards,
    cursors,
    perShard,
  );
  return {
    entries: window.entries.map((e) => ({ accountId: e.accountId, key: { pk: e.pk, sk: e.sk } })),
    more: window.more,
  };
}

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
    return mailOf(Attributes);
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Releases what `owner` still claims (due at once again): a runner named after its data folder (`npm start`) that
 * crashed finds its claims' entries at the claims' ends (claimOutbox moves them there), past a window of mail due
 * now, so it reads the due index up to `untilMs` (now and the longest claim) and moves each entry it still holds
 * back to `nowMs`, conditional on the claim being its own and live. The next pass claims and sends them (the same
 * Message-ID). One round trip a shard, one UpdateItem a claim released; answers how many.
 */
export async function releaseOwnClaims(
  owner: string,
  nowMs: number,
  untilMs: number,
  shards: readonly number[],
): Promise<number> {
  const { entries } = await dueOutbox(untilMs, shards, new Map());
  const released = await Promise.all(
    entries.map((entry) =>
      dynamo
        .send(
          new UpdateCommand({
            TableName: tableName(),
            Key: entry.key,
            UpdateExpression: 'SET gsi2sk = :sk',
            ConditionExpression: `${O.owner} = :owner AND ${O.until} >= :now`,
            ExpressionAttributeValues: {
              ':owner': owner,
              ':now': nowMs,
              ':sk': outboxKeys.due(entry.accountId, entry.key, nowMs).gsi2sk,
            },
          }),
        )
        .then(
          () => 1,
          (error: unknown) => {
            if (isConditionFailure(error)) return 0;
            throw error;
          },
        ),
    ),
  );
  return released.reduce((a, b) => a + b, 0);
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
