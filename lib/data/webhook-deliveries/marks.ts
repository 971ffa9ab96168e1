import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { formatTimestamp, nowMillis } from '#lib/time.ts';
import { webhookKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, retryOnConflict } from '../store/errors.ts';
import { ENDPOINT_ATTR as EP } from '../webhooks/webhooks.ts';
import { DISPATCH_ATTR } from './leases.ts';

/**
 * What attempts' outcomes write of the endpoint item, apart from their records (./record.ts): its success and failure
 * marks, its disabling, and the slow lane. Each is one UpdateItem, written only when it changes what the item says
 * (lib/webhooks/held-endpoint.ts decides), and conditional on the attempt's time, so that concurrent attempts' marks
 * land in any order and leave what the latest attempt says.
 */

/** What an attempt's outcome changes of the endpoint. */
export type EndpointOutcome =
  | { kind: 'success' }
  | { kind: 'failure' }
  /** A failure that disables the endpoint (410, or failing for DISABLE_AFTER_MS). */
  | { kind: 'disable'; reason: string };

/** `field` absent or null, or earlier than `:at`. */
const before = (field: string) => `(attribute_not_exists(${field}) OR ${field} = :null OR ${field} < :at)`;
/** `field` absent or null. */
const unset = (field: string) => `(attribute_not_exists(${field}) OR ${field} = :null)`;

/**
 * Writes the marks of an attempt that started at `at`: a success sets `lastSuccessAt` and ends the failing spell
 * (unless a later success is there, or the spell began at a later attempt's start); a failure starts the spell at `at` (unless one runs, or a later success is
 * there); a disable also turns the endpoint off with its reason. Answers false when nothing was written (a later
 * attempt's marks were there first, or the endpoint is gone).
 */
export async function markOutcome(
  accountId: string,
  endpointId: string,
  outcome: EndpointOutcome,
  at: number,
): Promise<boolean> {
  const values: Record<string, unknown> = { ':at': at, ':null': null };
  let update: string;
  let condition: string;
  if (outcome.kind === 'success') {
    update = `SET ${EP.lastSuccessAt} = :at, ${EP.failingSince} = :null`;
    // Nor a failing spell a later-started attempt began: that failure is the newer news.
    condition = `attribute_exists(pk) AND ${before(EP.lastSuccessAt)} AND ${before(EP.failingSince)}`;
  } else if (outcome.kind === 'failure') {
    update = `SET ${EP.failingSince} = :at`;
    condition = `attribute_exists(pk) AND ${unset(EP.failingSince)} AND ${before(EP.lastSuccessAt)}`;
  } else {
    update =
      `SET ${EP.enabled} = :false, ${EP.disabledReason} = :reason, ${EP.updatedAt} = :updated, ` +
      `${EP.failingSince} = if_not_exists(${EP.failingSince}, :at)`;
    condition = 'attribute_exists(pk)';
    Object.assign(values, {
      ':false': false,
      ':reason': outcome.reason,
      ':updated': formatTimestamp(nowMillis() * 1000),
    });
    delete values[':null'];
  }
  return conditionalUpdate(accountId, endpointId, update, condition, values);
}

/**
 * The endpoint's slow lane (lib/webhooks/due.ts): in it until `until` (epoch ms), or out of it (null). On the endpoint
 * item, so every runner, in this run and the next, sees it when it leases or renews the endpoint.
 */
export function markSlow(accountId: string, endpointId: string, until: number | null): Promise<boolean> {
  const field = DISPATCH_ATTR.slowUntil;
  return until === null
    ? conditionalUpdate(accountId, endpointId, `REMOVE ${field}`, `attribute_exists(${field})`, {})
    : conditionalUpdate(accountId, endpointId, `SET ${field} = :until`, 'attribute_exists(pk)', {
        ':until': until,
      });
}

async function conditionalUpdate(
  accountId: string,
  endpointId: string,
  update: string,
  condition: string,
  values: Record<string, unknown>,
): Promise<boolean> {
  try {
    await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: webhookKeys.endpoint(accountId, endpointId),
          UpdateExpression: update,
          ConditionExpression: condition,
          ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
        }),
      ),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
