import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { itemBytes } from '#test/support/dynamo-figures.ts';

/**
 * Every DynamoDB call of the process while recording, by what it is for: the webhook dispatcher's calls are
 * background work (a stream reader, a runner's loops), not one request that test/support/dynamo-figures.ts's
 * figuresOf could wrap, so each call is named from its own request (operation, the partitions it touches, its
 * update expression) and tallied with the same rules as dynamo-figures: items written per request, write units
 * computed from the requests (a put by its item's size, an update, delete or condition check as an item of at most
 * 1 KB, twice that in a transaction; DynamoDB Local under-reports a transaction's), items read from the answers,
 * and read units as DynamoDB Local reports them (ReturnConsumedCapacity=TOTAL). Calls made inside
 * `origin.run('dispatcher', …)` are the dispatcher's; others (the changes, the bench's own set-up) are kept apart.
 */
export const origin = new AsyncLocalStorage<string>();

export interface CallTally {
  calls: number;
  itemsWritten: number;
  writeUnits: number;
  itemsRead: number;
  /**
   * An estimate of the due index's write units (DynamoDB Local reports none): the due entry is on the endpoint item,
   * and the index (gsi2) projects its keys only, so only a write that sets or removes gsi2pk/gsi2sk writes it: 2 (the
   * entry moves: a delete and a put of a ~150-byte index item, 1 unit each; an upper bound); a write of the endpoint's
   * other attributes (the record's attempt count, its marks) writes no index. Before issue 27's keys-only index, gsi1
   * projected ALL: every write of an endpoint item in the index wrote it (1 or 2 units of a ≤ 1 KB endpoint).
   */
  indexWriteUnits: number;
  /** Read capacity units as DynamoDB Local reported them. */
  readUnits: number;
  /** The calls' time, summed (ms): their mean is what one took on this store, under this load. */
  ms: number;
}

type Input = Record<string, unknown>;
type Output = Record<string, unknown>;
type Action = Record<string, { Key?: { pk?: unknown }; Item?: Record<string, unknown> & { pk?: unknown } }>;

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);

const prefixOf = (pk: unknown) => (typeof pk === 'string' ? (pk.split('#')[0] ?? pk) : '?');

/** What a call is for, in the dispatcher's terms (docs/webhooks.md); an unknown call by operation and partition. */
export function purposeOf(op: string, input: Input): string {
  const key = input.Key as { pk?: unknown } | undefined;
  const item = input.Item as { pk?: unknown } | undefined;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const expression = String(input.UpdateExpression ?? '');
  if (op === 'TransactWriteItems') {
    const parts = (input.TransactItems as Action[]).map((a) => {
      const [kind, body] = Object.entries(a)[0] ?? ['?', {}];
      return `${kind} ${prefixOf(body.Key?.pk ?? body.Item?.pk)}`;
    });
    if (parts.includes('Put WEBHOOK_ATTEMPTS')) return 'attempt: record (transaction)';
    if (parts[0] === 'Put WEBHOOK_DELIVERY' && parts.includes('Put WEBHOOK_PENDING'))
      return 'fan-out: delivery + pending item (transaction)';
    return `TransactWriteItems: ${parts.join(', ')}`;
  }
  if (op === 'UpdateItem') {
    const table = prefixOf(key?.pk);
    if (table === 'WEBHOOK_DELIVERY' && expression.startsWith('SET leaseOwner')) return 'attempt: claim';
    if (table === 'WEBHOOKS') {
      if (expression.startsWith('SET leaseOwner')) return 'runner: lease';
      if (expression.startsWith('SET leaseUntil')) return 'runner: lease renewal';
      if (expression.includes('REMOVE') && expression.includes('leaseOwner'))
        return 'runner: release (write)';
      if (expression.includes('dueVersion')) return 'fan-out: due entry';
    }
    return `UpdateItem ${table}`;
  }
  if (op === 'Query') {
    if (input.IndexName) return 'runner: due index poll';
    const table = prefixOf(values[':pk']);
    if (table === 'WEBHOOKS') return 'fan-out: endpoints of the account';
    if (table === 'WEBHOOK_PENDING')
      return input.ProjectionExpression === 'sk'
        ? 'runner: release (earliest pending)'
        : 'runner: due deliveries';
    if (table === 'EVENTS') return 'attempt: event body';
    return `Query ${table}`;
  }
  if (op === 'GetItem' && prefixOf(key?.pk) === 'WEBHOOKS') {
    // The release and the attempt read the endpoint item by the same request: told apart by who asks.
    const stack = callers();
    if (stack.includes('releaseEndpoint')) return 'runner: release (endpoint read)';
    if (stack.includes('deliverOnce')) return 'attempt: endpoint read';
    return 'GetItem WEBHOOKS';
  }
  if (op === 'PutItem' && prefixOf(item?.pk) === 'STREAM_CHECKPOINT') return 'stream checkpoint (local only)';
  return `${op} ${prefixOf(key?.pk ?? item?.pk ?? values[':pk'])}`;
}

/** The current call stack, async frames included (the dispatcher's function names). */
function callers(): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 60;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  return stack;
}

function itemsWrittenOf(op: string, input: Input): number {
  if (op === 'PutItem' || op === 'UpdateItem' || op === 'DeleteItem') return 1;
  if (op === 'TransactWriteItems') return (input.TransactItems as unknown[]).length;
  if (op === 'BatchWriteItem')
    return Object.values(input.RequestItems as Record<string, unknown[]>).reduce((n, r) => n + r.length, 0);
  return 0;
}

const unitsOf = (item: Record<string, unknown> | undefined) =>
  item ? Math.max(1, Math.ceil(itemBytes(item) / 1024)) : 1;

function writeUnitsOf(op: string, input: Input): number {
  if (op === 'PutItem') return unitsOf(input.Item as Record<string, unknown>);
  if (op === 'UpdateItem' || op === 'DeleteItem') return 1;
  if (op === 'TransactWriteItems')
    return (input.TransactItems as { Put?: { Item: Record<string, unknown> } }[]).reduce(
      (n, a) => n + 2 * unitsOf(a.Put?.Item),
      0,
    );
  if (op === 'BatchWriteItem')
    return Object.values(
      input.RequestItems as Record<string, { PutRequest?: { Item: Record<string, unknown> } }[]>,
    )
      .flat()
      .reduce((n, r) => n + unitsOf(r.PutRequest?.Item), 0);
  return 0;
}

function indexWriteUnitsOf(op: string, input: Input): number {
  const updates =
    op === 'UpdateItem'
      ? [input]
      : op === 'TransactWriteItems'
        ? (input.TransactItems as { Update?: Input }[]).flatMap((a) => (a.Update ? [a.Update] : []))
        : [];
  return updates
    .filter((u) => prefixOf((u.Key as { pk?: unknown } | undefined)?.pk) === 'WEBHOOKS')
    .reduce((n, u) => n + (/gsi2/.test(String(u.UpdateExpression ?? '')) ? 2 : 0), 0);
}

function itemsReadOf(op: string, output: Output): number {
  if (op === 'GetItem') return output.Item ? 1 : 0;
  if (op === 'Query' || op === 'Scan') return (output.Items as unknown[] | undefined)?.length ?? 0;
  if (op === 'BatchGetItem')
    return Object.values((output.Responses as Record<string, unknown[]>) ?? {}).reduce(
      (n, r) => n + r.length,
      0,
    );
  return 0;
}

function capacityOf(output: Output): number {
  const consumed = output.ConsumedCapacity as
    | { CapacityUnits?: number }
    | { CapacityUnits?: number }[]
    | undefined;
  return consumed ? [consumed].flat().reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0) : 0;
}

export class StoreCalls {
  private tallies = new Map<string, CallTally>();
  private recording = false;

  /**
   * Adds the recorder to the client (once). `readUnits: false` asks the store for no consumed capacity (read units
   * are then 0): DynamoDB Local works a write's out under its table lock (its table's description read back an
   * item), which the service never asks for, so a bench timing writes at the store's limit must not ask either
   * (bench/time-rules.ts; docs/rules.md).
   */
  constructor(client: DynamoDBDocumentClient, options: { readUnits?: boolean } = {}) {
    const askUnits = options.readUnits ?? true;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as Input;
        if (askUnits && !('ReturnConsumedCapacity' in input)) input.ReturnConsumedCapacity = 'TOTAL';
        if (!this.recording) return next(args);
        const op = String(context.commandName).replace(/Command$/, '');
        const key = `${origin.getStore() ?? 'other'}|${purposeOf(op, input)}`;
        const tally = this.tallies.get(key) ?? {
          calls: 0,
          itemsWritten: 0,
          writeUnits: 0,
          indexWriteUnits: 0,
          itemsRead: 0,
          readUnits: 0,
          ms: 0,
        };
        this.tallies.set(key, tally);
        tally.calls++;
        tally.itemsWritten += itemsWrittenOf(op, input);
        tally.writeUnits += writeUnitsOf(op, input);
        tally.indexWriteUnits += indexWriteUnitsOf(op, input);
        const started = performance.now();
        try {
          const result = await next(args);
          const output = result.output as Output;
          tally.itemsRead += itemsReadOf(op, output);
          if (!WRITES.has(op)) tally.readUnits += capacityOf(output);
          return result;
        } finally {
          tally.ms += performance.now() - started;
        }
      },
      { step: 'initialize', name: 'benchStoreCalls', priority: 'low' },
    );
  }

  /** Starts a new recording (what was recorded before is dropped). */
  start(): void {
    this.tallies = new Map();
    this.recording = true;
  }

  /** Ends the recording: its tallies by origin and purpose. */
  stop(): Map<string, Map<string, CallTally>> {
    this.recording = false;
    const byOrigin = new Map<string, Map<string, CallTally>>();
    for (const [key, tally] of this.tallies) {
      const [who, purpose] = key.split('|') as [string, string];
      const map = byOrigin.get(who) ?? new Map<string, CallTally>();
      map.set(purpose, tally);
      byOrigin.set(who, map);
    }
    return byOrigin;
  }
}
