import { isDeepStrictEqual } from 'node:util';
import { type Endpoint, MAX_ENDPOINTS } from '#lib/webhooks/types.ts';
import { webhookKeys } from '../keys.ts';
import { type CommitAttachment, completionCommit } from '../requests/idempotency.ts';
import { getItem, queryAll, tableName } from '../store/client.ts';
import { ConcurrentWrite, isTransactionConflict, retryOnConflict, StaleVersion } from '../store/errors.ts';
import { ATTR, type Versioned } from '../store/items.ts';
import { type CommitAction, commit } from '../store/transact.ts';

/**
 * Webhook endpoints in the store (docs/webhooks.md, "Items"): an item per endpoint in the account's webhooks
 * partition, holding the Endpoint's fields under their own names (its secrets too: they are kept nowhere else),
 * with a version (`v`) that every management write bumps; and the account's count item (`n` ≤ MAX_ENDPOINTS),
 * moved in the same transaction as each create and delete. The dispatcher writes its own fields of the endpoint
 * item (lastSuccessAt, failingSince, enabled and disabledReason when it disables one, the due index keys)
 * without the version: a management write sets only the fields it changes, so neither undoes the other.
 */

/** The account has MAX_ENDPOINTS endpoints already: nothing was written. */
export class EndpointLimitReached extends Error {
  constructor() {
    super(`The account has ${MAX_ENDPOINTS} webhook endpoints already`);
  }
}

/** The endpoint is not (or no longer) stored: nothing was written. */
export class EndpointNotFound extends Error {
  constructor() {
    super('No such webhook endpoint');
  }
}

const ENDPOINT_TYPE = 'webhook_endpoint';

function endpointItem(endpoint: Endpoint): Record<string, unknown> {
  return {
    ...webhookKeys.endpoint(endpoint.accountId, endpoint.id),
    type: ENDPOINT_TYPE,
    [ATTR.version]: 1,
    ...endpoint,
  };
}

/** The Endpoint's own fields, as the item holds them (the dispatcher adds its own beside them). */
const ENDPOINT_FIELDS = [
  'accountId',
  'id',
  'url',
  'events',
  'description',
  'enabled',
  'disabledReason',
  'secrets',
  'createdAt',
  'updatedAt',
  'lastSuccessAt',
  'failingSince',
] as const satisfies readonly (keyof Endpoint)[];
/** The endpoint item's own attributes: the Endpoint's fields, their own names (the dispatcher's: leases.ts). */
export const ENDPOINT_ATTR = Object.fromEntries(ENDPOINT_FIELDS.map((field) => [field, field])) as {
  readonly [F in (typeof ENDPOINT_FIELDS)[number]]: F;
};
// A field added to Endpoint and not read back here fails the typecheck.
const everyField: Exclude<keyof Endpoint, (typeof ENDPOINT_FIELDS)[number]> extends never ? true : never =
  true;
void everyField;

/**
 * An endpoint item read back: the Endpoint's fields only (not the layout's keys and version, nor the
 * dispatcher's lease, due entry and counters); a time field the dispatcher removed reads as null.
 */
export function endpointOf(item: Record<string, unknown>): Endpoint {
  const entity = Object.fromEntries(ENDPOINT_FIELDS.map((field) => [field, item[field] ?? null]));
  return entity as unknown as Endpoint;
}

/**
 * Stores a new endpoint and counts it, in one transaction: refused (EndpointLimitReached) when the account has
 * MAX_ENDPOINTS already, so concurrent creates cannot pass the limit together.
 */
export async function createEndpoint(
  endpoint: Endpoint,
  options: { attach?: CommitAttachment | undefined } = {},
): Promise<void> {
  const actions: CommitAction[] = [
    {
      what: 'webhook_endpoint',
      action: {
        Put: {
          TableName: tableName(),
          Item: endpointItem(endpoint),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
    {
      what: 'webhook_count',
      action: {
        Update: {
          TableName: tableName(),
          Key: webhookKeys.count(endpoint.accountId),
          UpdateExpression: 'SET #n = if_not_exists(#n, :zero) + :one',
          ConditionExpression: 'attribute_not_exists(#n) OR #n < :max',
          ExpressionAttributeNames: { '#n': ATTR.count },
          ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':max': MAX_ENDPOINTS },
        },
      },
      refused: () => new EndpointLimitReached(),
    },
    ...completionCommit(options.attach),
  ];
  await retryOnConflict(() => commit(actions));
}

/** One endpoint of the account and its version (strongly consistent), or undefined. */
export async function getEndpoint(
  accountId: string,
  endpointId: string,
): Promise<Versioned<Endpoint> | undefined> {
  const item = await getItem(webhookKeys.endpoint(accountId, endpointId));
  return item ? { entity: endpointOf(item), version: Number(item[ATTR.version] ?? 1) } : undefined;
}

/**
 * Every endpoint of the account, oldest first: one Query of its partition (at most MAX_ENDPOINTS small items).
 * Strongly consistent unless `eventual` (the dispatcher's fan-out may take the cheaper read).
 */
export async function listEndpoints(
  accountId: string,
  options: { eventual?: boolean } = {},
): Promise<Endpoint[]> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: {
      ':pk': webhookKeys.partition(accountId),
      ':prefix': webhookKeys.endpointPrefix,
    },
    ConsistentRead: !options.eventual,
  });
  return items.map(endpointOf);
}

/** The fields a management write may change; the dispatcher's own (lastSuccessAt, the due index) are left alone. */
const MANAGED_FIELDS = [
  'url',
  'events',
  'description',
  'enabled',
  'disabledReason',
  'failingSince',
  'secrets',
  'updatedAt',
] as const satisfies readonly (keyof Endpoint)[];

/**
 * Writes an endpoint's change: the managed fields that differ, guarded by the version read. Answers the new
 * version; StaleVersion when another management write landed first, ConcurrentWrite when a transaction touched
 * the item meanwhile (decide again), EndpointNotFound when it was deleted.
 */
export async function updateEndpoint(
  change: { before: Endpoint; after: Endpoint; version: number },
  options: { attach?: CommitAttachment | undefined } = {},
): Promise<number> {
  const { before, after, version } = change;
  const changed = MANAGED_FIELDS.filter((field) => !isDeepStrictEqual(before[field], after[field]));
  const names: Record<string, string> = { '#v': ATTR.version };
  const values: Record<string, unknown> = { ':v': version, ':next': version + 1 };
  const sets = ['#v = :next'];
  for (const [i, field] of changed.entries()) {
    names[`#f${i}`] = field;
    values[`:f${i}`] = after[field];
    sets.push(`#f${i} = :f${i}`);
  }
  const actions: CommitAction[] = [
    {
      what: 'webhook_endpoint',
      action: {
        Update: {
          TableName: tableName(),
          Key: webhookKeys.endpoint(after.accountId, after.id),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: '#v = :v',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      refused: (held) => (held ? new StaleVersion() : new EndpointNotFound()),
    },
    ...completionCommit(options.attach),
  ];
  try {
    await commit(actions);
  } catch (error) {
    if (isTransactionConflict(error)) throw new ConcurrentWrite({ cause: error });
    throw error;
  }
  return version + 1;
}

/**
 * Deletes an endpoint and uncounts it, in one transaction: EndpointNotFound when it is not there (deleted by a
 * concurrent request). Its deliveries still pending find no endpoint and are dropped by the dispatcher.
 */
export async function deleteEndpoint(
  accountId: string,
  endpointId: string,
  options: { attach?: CommitAttachment | undefined } = {},
): Promise<void> {
  const actions: CommitAction[] = [
    {
      what: 'webhook_endpoint',
      action: {
        Delete: {
          TableName: tableName(),
          Key: webhookKeys.endpoint(accountId, endpointId),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
      refused: () => new EndpointNotFound(),
    },
    {
      what: 'webhook_count',
      action: {
        Update: {
          TableName: tableName(),
          Key: webhookKeys.count(accountId),
          UpdateExpression: 'ADD #n :minusOne',
          ExpressionAttributeNames: { '#n': ATTR.count },
          ExpressionAttributeValues: { ':minusOne': -1 },
        },
      },
    },
    ...completionCommit(options.attach),
  ];
  await retryOnConflict(() => commit(actions));
}
