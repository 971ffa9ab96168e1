import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { Conflict } from '#lib/errors.ts';
import { idempotencyKeys, objectRefKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, isTransactionConflict, itemOnConditionFailure } from '../store/errors.ts';
import type { CommitAction, TransactAction } from '../store/transact.ts';
import { rateExempt } from './rate-limit.ts';

/**
 * Idempotency records (decisions.md, "Safe retries"): one item per (account, key). A request claims its key
 * before it does anything; the change it makes and its kept answer are written in one transaction (the
 * completion below), so no reader can see a change without its answer or an answer without its change.
 *
 * States: `running` (claimed; the claim's lease ends at `lease_until`, after which the key may be claimed
 * again: its holder is gone) and `done` (the answer is kept until `expires_at`, 24 h after the claim).
 */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/**
 * How long a claim holds off others: as long as a request may run (the function timeout). A holder that
 * is slower than that cannot land its change after another request took the key over (the completion's
 * condition names the holder's token), so the lease protects only against doing the work twice.
 */
export const IDEMPOTENCY_LEASE_MS = FUNCTION_TIMEOUT_MS;

export interface IdempotencyClaim {
  accountId: string;
  keyHash: string;
  fingerprint: string;
  /** Unique per claim: only its holder may complete or release it. */
  token: string;
  /** Epoch seconds. */
  expiresAt: number;
}

/** An answer as kept with its key: status, the exact body text, and the route's own headers (an ETag). */
export interface KeptAnswer {
  statusCode: number;
  body: string;
  headers?: Record<string, string>;
}

export type ClaimOutcome =
  | { outcome: 'claimed' }
  | { outcome: 'done'; fingerprint: string; answer: KeptAnswer }
  | { outcome: 'running'; fingerprint: string };

const RUNNING = 'running';
const DONE = 'done';

/** One conditional Put: the key is free (never used, expired, or its holder's lease ran out), or who has it. */
export async function claimIdempotencyKey(claim: IdempotencyClaim, nowMs: number): Promise<ClaimOutcome> {
  try {
    // Beside the request's rate count, not after it: a refused request releases its claim (nothing kept).
    await rateExempt(() =>
      dynamo.send(
        new PutCommand({
          TableName: tableName(),
          Item: {
            ...idempotencyKeys.record(claim.accountId, claim.keyHash),
            type: 'idempotency',
            state: RUNNING,
            fingerprint: claim.fingerprint,
            token: claim.token,
            lease_until: nowMs + IDEMPOTENCY_LEASE_MS,
            expires_at: claim.expiresAt,
          },
          ConditionExpression:
            'attribute_not_exists(pk) OR expires_at < :now OR (#state = :running AND lease_until < :nowMs)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':now': Math.floor(nowMs / 1000),
            ':nowMs': nowMs,
            ':running': RUNNING,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return { outcome: 'claimed' };
  } catch (error) {
    // The key's record is in the commit transaction of the request that holds the key: a claim arriving while
    // that commit runs meets DynamoDB's TransactionConflictException. The key is taken, still running.
    if (isTransactionConflict(error)) return { outcome: 'running', fingerprint: claim.fingerprint };
    const held = isConditionFailure(error) ? itemOnConditionFailure(error) : undefined;
    if (!held) throw error;
    const fingerprint = String(held.fingerprint);
    if (held.state === DONE) {
      return {
        outcome: 'done',
        fingerprint,
        answer: {
          statusCode: Number(held.status),
          body: String(held.body),
          ...(held.headers ? { headers: held.headers as Record<string, string> } : {}),
        },
      };
    }
    return { outcome: 'running', fingerprint };
  }
}

function doneRecord(claim: IdempotencyClaim, answer: KeptAnswer) {
  return {
    TableName: tableName(),
    Item: {
      ...idempotencyKeys.record(claim.accountId, claim.keyHash),
      type: 'idempotency',
      state: DONE,
      fingerprint: claim.fingerprint,
      token: claim.token,
      status: answer.statusCode,
      body: answer.body,
      ...(answer.headers && Object.keys(answer.headers).length > 0 ? { headers: answer.headers } : {}),
      expires_at: claim.expiresAt,
      ...refOfAnswer(claim, answer),
    },
    // Only the claim's holder completes it, and only once: a request whose lease ran out and whose key was
    // claimed again cannot also land its change.
    ConditionExpression: '#token = :token AND #state = :running',
    ExpressionAttributeNames: { '#token': 'token', '#state': 'state' },
    ExpressionAttributeValues: { ':token': claim.token, ':running': RUNNING },
  };
}

/**
 * What a write adds to its commit so that its request's outcome is kept with its change: plain data (the
 * Put of the Idempotency-Key's record as `done`, with the answer already rendered), made by the HTTP stack
 * for the result the write is about to store. The data layer adds it to the transaction as it is; neither
 * it nor the domain knows what it holds.
 */
export interface CommitAttachment {
  readonly action: TransactAction;
}

/** The attachment that keeps `answer` with the claimed key: put it in the same transaction as the change. */
export function completionAttachment(claim: IdempotencyClaim, answer: KeptAnswer): CommitAttachment {
  return { action: { Put: doneRecord(claim, answer) } };
}

/**
 * A write's attachment as the last action of its commit (none without one). Its condition failing means the
 * claim ran out and another request holds the key now.
 */
export function completionCommit(attachment: CommitAttachment | undefined): CommitAction[] {
  return attachment
    ? [{ what: 'idempotency', action: attachment.action, refused: idempotencyTakenOver }]
    : [];
}

/** Keeps the answer of a request that wrote nothing else (nothing to be atomic with). */
export async function keepAnswer(claim: IdempotencyClaim, answer: KeptAnswer): Promise<void> {
  await dynamo.send(new PutCommand(doneRecord(claim, answer)));
}

/**
 * Frees a claim whose request failed, so that the client may fix it and retry with the same key. A claim that
 * was completed meanwhile (its change landed although the request reported a failure) stays as it is.
 */
export async function releaseIdempotencyKey(claim: IdempotencyClaim): Promise<void> {
  try {
    await rateExempt(() =>
      dynamo.send(
        new DeleteCommand({
          TableName: tableName(),
          Key: idempotencyKeys.record(claim.accountId, claim.keyHash),
          ConditionExpression: '#token = :token AND #state = :running',
          ExpressionAttributeNames: { '#token': 'token', '#state': 'state' },
          ExpressionAttributeValues: { ':token': claim.token, ':running': RUNNING },
        }),
      ),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

/** A write's claim ran out and another request holds the key now: that one completes, this one changed nothing. */
export function idempotencyTakenOver(): Conflict {
  return new Conflict('A request with this idempotency key is still being processed.');
}

/**
 * The object reference of a kept answer (keys only, gsi2): the object its body answers (`data` or `ticket`: its
 * `uuid`, a message's `ticket_uuid`), so that an erasure finds the kept answers holding a person by their objects,
 * never by a Scan.
 */
function refOfAnswer(claim: IdempotencyClaim, answer: KeptAnswer): Record<string, string> {
  type Shown = { uuid?: unknown; ticket_uuid?: unknown };
  let object: Shown | undefined;
  try {
    const body = JSON.parse(answer.body) as { data?: Shown; ticket?: Shown };
    object = body.data ?? body.ticket;
  } catch {
    return {};
  }
  const uuid = typeof object?.ticket_uuid === 'string' ? object.ticket_uuid : object?.uuid;
  return typeof uuid === 'string'
    ? objectRefKeys.ref(claim.accountId, uuid, 'idempotency', claim.keyHash)
    : {};
}
