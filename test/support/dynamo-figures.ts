import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Per-request DynamoDB figures, from an SDK middleware on the service's own client: sequential round trips,
 * the operations of each round trip, items read and written, and consumed capacity (every call is sent with
 * ReturnConsumedCapacity=TOTAL). A call's round trip is one more than the deepest call that had completed when
 * it started: calls sent together share one, a call sent after another answered is one further, whatever else
 * (the rate count) is still in flight beside them.
 */
export interface RequestFigures {
  roundTrips: number;
  /** Operation names per round trip, e.g. [['UpdateItem','GetItem'], ['TransactWriteItems']]. */
  operations: string[][];
  itemsRead: number;
  /** Of the items read, whole tickets (their own partition): a list reads no more than its page. */
  ticketsRead: number;
  /**
   * Of the items read, shards of counters and stats cells (`…_STATS#…`, `#COUNT…`): a total sums up to
   * COUNTER_SHARDS small items of one partition, one Query (about 1 read unit), whatever the account's size.
   */
  countItemsRead: number;
  itemsWritten: number;
  capacity: number;
  /**
   * Write units as DynamoDB charges them, computed from the requests (DynamoDB Local reports a transaction as if
   * it wrote at most two items): a put by its item's size (1 unit a KB), an update, delete or condition check as
   * an item of at most 1 KB (a lower bound: their items' sizes are not in the request), twice that in a
   * transaction.
   */
  writeUnits: number;
}

let current: RequestFigures | undefined;
/** The deepest round trip among the calls of the current request that have answered. */
let deepestAnswered = 0;

type Output = Record<string, unknown>;

function capacityOf(output: Output): number {
  const consumed = output.ConsumedCapacity as
    | { CapacityUnits?: number }
    | { CapacityUnits?: number }[]
    | undefined;
  if (!consumed) return 0;
  return [consumed].flat().reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
}

function itemsReadOf(command: string, output: Output): number {
  if (command === 'GetItemCommand') return output.Item ? 1 : 0;
  if (command === 'QueryCommand') return (output.Items as unknown[] | undefined)?.length ?? 0;
  if (command === 'BatchGetItemCommand') {
    return Object.values((output.Responses as Record<string, unknown[]>) ?? {}).reduce(
      (n, r) => n + r.length,
      0,
    );
  }
  return 0;
}

/** Items read that are counter shards or stats cells (lib/data/keys.ts, indexKeys). */
function countItemsReadOf(output: Output): number {
  const items = [
    ...(output.Item ? [output.Item] : []),
    ...((output.Items as unknown[] | undefined) ?? []),
    ...Object.values((output.Responses as Record<string, unknown[]> | undefined) ?? {}).flat(),
  ] as { pk?: unknown; sk?: unknown }[];
  return items.filter(
    (i) =>
      (typeof i.pk === 'string' && /^[A-Z_]+_STATS#/.test(i.pk)) ||
      (typeof i.sk === 'string' && i.sk.startsWith('#COUNT')),
  ).length;
}

/** Items read that are whole tickets: the ticket partition is `TICKETS#<account>` (lib/data/keys.ts). */
function ticketsReadOf(output: Output): number {
  const items = [
    ...(output.Item ? [output.Item] : []),
    ...((output.Items as unknown[] | undefined) ?? []),
    ...Object.values((output.Responses as Record<string, unknown[]> | undefined) ?? {}).flat(),
  ] as { pk?: unknown }[];
  const pkOf = (pk: unknown) => (typeof pk === 'string' ? pk : (pk as { S?: string } | undefined)?.S);
  return items.filter((item) => pkOf(item.pk)?.startsWith('TICKETS#')).length;
}

/** An attribute value's size as DynamoDB counts it (near enough: a number as 1 byte per 2 digits, plus 1). */
function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number' || typeof value === 'bigint') return Math.ceil(String(value).length / 2) + 1;
  if (value instanceof Uint8Array) return value.length;
  if (value instanceof Set) return [...value].reduce((n: number, v) => n + valueBytes(v), 0);
  if (Array.isArray(value)) return 3 + value.reduce((n: number, v) => n + valueBytes(v) + 1, 0);
  if (value && typeof value === 'object') {
    // A NumberValue (an exact decimal): a number.
    if ('value' in value && Object.keys(value).length === 1)
      return Math.ceil(String(value.value).length / 2) + 1;
    return 3 + Object.entries(value).reduce((n, [k, v]) => n + Buffer.byteLength(k) + valueBytes(v) + 1, 0);
  }
  return 1;
}

/** An item's size as DynamoDB counts it: its attribute names and values. */
export function itemBytes(item: Record<string, unknown>): number {
  return Object.entries(item).reduce(
    (n, [name, value]) => n + Buffer.byteLength(name) + valueBytes(value),
    0,
  );
}

type WriteRequest = {
  Put?: { Item: Record<string, unknown> };
  PutRequest?: { Item: Record<string, unknown> };
};
const unitsOf = (request: WriteRequest) => {
  const item = request.Put?.Item ?? request.PutRequest?.Item;
  return item ? Math.max(1, Math.ceil(itemBytes(item) / 1024)) : 1;
};

function writeUnitsOf(command: string, input: Output): number {
  if (command === 'PutItemCommand') return unitsOf({ Put: { Item: input.Item as Record<string, unknown> } });
  if (command === 'UpdateItemCommand' || command === 'DeleteItemCommand') return 1;
  if (command === 'TransactWriteItemsCommand')
    return (input.TransactItems as WriteRequest[]).reduce((n, a) => n + 2 * unitsOf(a), 0);
  if (command === 'BatchWriteItemCommand') {
    return Object.values(input.RequestItems as Record<string, WriteRequest[]>)
      .flat()
      .reduce((n, r) => n + unitsOf(r), 0);
  }
  return 0;
}

function itemsWrittenOf(command: string, input: Output): number {
  if (command === 'PutItemCommand' || command === 'UpdateItemCommand') return 1;
  if (command === 'TransactWriteItemsCommand') return (input.TransactItems as unknown[]).length;
  if (command === 'BatchWriteItemCommand') {
    return Object.values(input.RequestItems as Record<string, unknown[]>).reduce((n, r) => n + r.length, 0);
  }
  return 0;
}

export function instrument(client: DynamoDBDocumentClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Output;
      const figures = current;
      // Only while counting: a worker's later files (one module graph) send their calls as they are.
      if (figures && !('ReturnConsumedCapacity' in input)) input.ReturnConsumedCapacity = 'TOTAL';
      const command = String(context.commandName);
      const depth = deepestAnswered + 1;
      if (figures) {
        figures.roundTrips = Math.max(figures.roundTrips, depth);
        while (figures.operations.length < depth) figures.operations.push([]);
        figures.operations[depth - 1]?.push(command.replace(/Command$/, ''));
        figures.itemsWritten += itemsWrittenOf(command, input);
        figures.writeUnits += writeUnitsOf(command, input);
      }
      try {
        const result = await next(args);
        if (figures) {
          const output = result.output as Output;
          figures.itemsRead += itemsReadOf(command, output);
          figures.ticketsRead += ticketsReadOf(output);
          figures.countItemsRead += countItemsReadOf(output);
          figures.capacity += capacityOf(output);
        }
        return result;
      } finally {
        if (figures && figures === current) deepestAnswered = Math.max(deepestAnswered, depth);
      }
    },
    { step: 'initialize', name: 'benchFigures', priority: 'low' },
  );
}

/** Runs one request and returns what it cost in DynamoDB terms. */
export async function figuresOf(fn: () => Promise<unknown>): Promise<RequestFigures> {
  current = {
    roundTrips: 0,
    operations: [],
    itemsRead: 0,
    ticketsRead: 0,
    countItemsRead: 0,
    itemsWritten: 0,
    capacity: 0,
    writeUnits: 0,
  };
  deepestAnswered = 0;
  const figures = current;
  try {
    await fn();
  } finally {
    current = undefined;
  }
  return figures;
}
