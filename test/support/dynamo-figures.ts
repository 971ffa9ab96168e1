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
  itemsWritten: number;
  capacity: number;
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
      if (!('ReturnConsumedCapacity' in input)) input.ReturnConsumedCapacity = 'TOTAL';
      const command = String(context.commandName);
      const figures = current;
      const depth = deepestAnswered + 1;
      if (figures) {
        figures.roundTrips = Math.max(figures.roundTrips, depth);
        while (figures.operations.length < depth) figures.operations.push([]);
        figures.operations[depth - 1]?.push(command.replace(/Command$/, ''));
        figures.itemsWritten += itemsWrittenOf(command, input);
      }
      try {
        const result = await next(args);
        if (figures) {
          const output = result.output as Output;
          figures.itemsRead += itemsReadOf(command, output);
          figures.ticketsRead += ticketsReadOf(output);
          figures.capacity += capacityOf(output);
        }
        return result;
      } finally {
        if (figures && figures === current) deepestAnswered = Math.max(deepestAnswered, depth);
      }
    },
    { step: 'initialize', name: 'benchFigures', priority: 'high' },
  );
}

/** Runs one request and returns what it cost in DynamoDB terms. */
export async function figuresOf(fn: () => Promise<unknown>): Promise<RequestFigures> {
  current = { roundTrips: 0, operations: [], itemsRead: 0, ticketsRead: 0, itemsWritten: 0, capacity: 0 };
  deepestAnswered = 0;
  const figures = current;
  try {
    await fn();
  } finally {
    current = undefined;
  }
  return figures;
}
