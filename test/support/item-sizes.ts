import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from '#lib/data/store/client.ts';
import { table } from '#lib/data/store/table.ts';
import { itemBytes } from './dynamo-figures.ts';

/**
 * What each item a request writes weighs, as DynamoDB charges it: a write costs 1 unit per KB of the larger of
 * the item's size before and after it (twice that in a transaction), whatever part of it the write changed.
 * DynamoDB Local reports neither (a transaction as if it wrote at most two items, an update as the size of the
 * request), and an UpdateItem request does not carry its item's size, so this meter reads every item a write
 * touches just before and just after it, through a client of its own that nothing else instruments. The reads
 * make the request slower: it measures sizes, never times.
 */
export interface ItemWrite {
  /** The item's key with account ids and order keys generalised: `TICKET_STATS#<acc>` / `STATS`. */
  shape: string;
  pk: string;
  sk: string;
  operation: string;
  transactional: boolean;
  bytesBefore: number;
  bytesAfter: number;
  writeUnits: number;
}

const NAME = 'itemSizeMeter';
let current: ItemWrite[] | undefined;
let installed = false;

const reader = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    endpoint: process.env.DYNAMODB_ENDPOINT,
    region: process.env.AWS_REGION ?? 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  }),
);

type Input = Record<string, unknown>;
type Key = { pk: string; sk: string };

function keyOf(keyOrItem: Input | undefined): Key {
  return { pk: String(keyOrItem?.[table.partitionKey]), sk: String(keyOrItem?.[table.sortKey]) };
}

/** The items a write call touches, each with its operation. */
function writesOf(command: string, input: Input): { key: Key; operation: string; transactional: boolean }[] {
  if (command === 'TransactWriteItemsCommand') {
    return (input.TransactItems as Record<string, Input>[]).flatMap((action) =>
      Object.entries(action)
        .filter(([operation]) => operation !== 'ConditionCheck')
        .map(([operation, body]) => ({
          key: keyOf((body.Key ?? body.Item) as Input),
          operation,
          transactional: true,
        })),
    );
  }
  if (command === 'BatchWriteItemCommand') {
    return Object.values(input.RequestItems as Record<string, Input[]>)
      .flat()
      .map((request) => {
        const put = request.PutRequest as Input | undefined;
        const del = request.DeleteRequest as Input | undefined;
        return {
          key: keyOf((put?.Item ?? del?.Key) as Input),
          operation: put ? 'Put' : 'Delete',
          transactional: false,
        };
      });
  }
  const operation = { PutItemCommand: 'Put', UpdateItemCommand: 'Update', DeleteItemCommand: 'Delete' }[
    command
  ];
  if (!operation) return [];
  return [{ key: keyOf((input.Key ?? input.Item) as Input), operation, transactional: false }];
}

async function sizesOf(keys: Key[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const unique = [...new Map(keys.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
  for (let i = 0; i < unique.length; i += 100) {
    const { Responses } = await reader.send(
      new BatchGetCommand({
        RequestItems: { [tableName()]: { Keys: unique.slice(i, i + 100), ConsistentRead: true } },
      }),
    );
    for (const item of Responses?.[tableName()] ?? []) {
      const key = keyOf(item);
      sizes.set(`${key.pk}\u0000${key.sk}`, itemBytes(item));
    }
  }
  return sizes;
}

/** `TICKET_INDEX#<acc>#status#open` / `<order key>`: what kind of item it is, not which. */
export function shapeOf(key: Key, accountIds: readonly string[]): string {
  const general = (part: string) => {
    let out = part;
    for (const id of accountIds) out = out.split(id).join('<acc>');
    return out
      .replace(/\d{17}#\d{10}/g, '<order key>')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>');
  };
  return `${general(key.pk)} / ${general(key.sk)}`;
}

function install(): void {
  if (installed) return;
  installed = true;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const log = current;
      const writes = log ? writesOf(String(context.commandName), args.input as Input) : [];
      if (!log || writes.length === 0) return next(args);
      const before = await sizesOf(writes.map((w) => w.key));
      const result = await next(args);
      const after = await sizesOf(writes.map((w) => w.key));
      for (const write of writes) {
        const id = `${write.key.pk}\u0000${write.key.sk}`;
        const bytesBefore = before.get(id) ?? 0;
        const bytesAfter = after.get(id) ?? 0;
        const units = Math.max(1, Math.ceil(Math.max(bytesBefore, bytesAfter) / 1024));
        log.push({
          shape: '',
          ...write.key,
          operation: write.operation,
          transactional: write.transactional,
          bytesBefore,
          bytesAfter,
          writeUnits: write.transactional ? 2 * units : units,
        });
      }
      return result;
    },
    { step: 'initialize', name: NAME, priority: 'low' },
  );
}

/** Runs `work` and answers every item its writes touched, with its size before and after and its write units. */
export async function measureItemWrites(
  work: () => Promise<unknown>,
  accountIds: readonly string[],
): Promise<ItemWrite[]> {
  install();
  const log: ItemWrite[] = [];
  current = log;
  try {
    await work();
  } finally {
    current = undefined;
  }
  return log.map((write) => ({ ...write, shape: shapeOf(write, accountIds) }));
}
