import { nowMillis } from '#lib/time.ts';
import { addressHash } from '../index/keyed.ts';
import { outboxKeys } from '../keys.ts';
import { getItem, tableName } from '../store/client.ts';
import { commit } from '../store/transact.ts';
import { outboxAttributes, QUEUED } from './item.ts';

/** A ticket's acknowledgement in the outbox: queued at most once a ticket, capped per sender and hour. */

/** Acknowledgements to one sender within one hour, at most (decisions.md, "The e-mail channel"). */
export const ACKS_PER_SENDER_HOUR = 10;

/** Why an acknowledgement was not queued. */
export class AckRefused extends Error {
  constructor(readonly reason: 'already' | 'capped') {
    super(`acknowledgement not queued: ${reason}`);
  }
}

/**
 * A sender's name in their acknowledgement counters' sort keys: the keyed hash (addressHash) of the address
 * without its `+tag` (`base`, which the domain gives: lib/email/addresses.ts), so `victim+1@` and `victim+2@`
 * share one cap (decisions.md, "The e-mail channel"); never an unkeyed hash, which anyone could compute from a
 * guessed address ("Erasing a person").
 */
export const senderHash = (accountId: string, base: string) => addressHash(accountId, base).slice(0, 40);

/**
 * Queues a ticket's acknowledgement (`mail`: what the runner sends) at most once per ticket and at most
 * ACKS_PER_SENDER_HOUR per sender per hour: its Put (conditional on none for the ticket) and the sender's hour
 * counter (conditional on being under the cap) in one transaction. Throws AckRefused otherwise. `senderBase`: the
 * sender's address without its `+tag`, by which the cap counts.
 */
export async function queueAck(
  accountId: string,
  ticketUuid: string,
  senderBase: string,
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
          Key: outboxKeys.ackRate(accountId, senderHash(accountId, senderBase), hour),
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

/** A ticket's acknowledgement item as stored (strongly consistent; with its keys), or undefined. */
export const ackItem = (accountId: string, ticketUuid: string) =>
  getItem(outboxKeys.ack(accountId, ticketUuid));
