import { beforeAll, describe, expect, it } from 'vitest';
import { dynamo } from '#lib/data/store/client.ts';
import { useGateway } from '#test/support/http.ts';
import { measureItemWrites } from '#test/support/item-sizes.ts';
import { changesOn, LARGE, SMALL } from '#test/support/sized-accounts.ts';

/**
 * Nothing grows with the account (issue 27). Each kind of change is made on a small account and on a large one
 * with the same history (test/support/sized-accounts.ts: 3 agents, 2 stages, 1 currency against 1,000 agents, 20
 * stages, 5 currencies), and compared:
 * - no expression grows: DynamoDB refuses an expression over 4 KB, so one that names every agent, stage or
 *   currency of the account (as least-busy's condition once did, a clause per candidate) fails outright past
 *   some account size. Every store call the service sends is recorded, with its expressions and their names
 *   and values;
 * - no item grows: an item holding a counter per agent, stage or currency ever used (as the ticket and deal
 *   stats items once did) costs a write unit per KB on every change that writes it, and fails every change past
 *   400 KB. Every item a change writes is weighed as DynamoDB charges it (test/support/item-sizes.ts).
 * Ids a few digits longer are the only difference allowed.
 */
const gateway = useGateway();

interface Sizes {
  expression: number;
  namesAndValues: number;
}

const EXPRESSIONS = [
  'UpdateExpression',
  'ConditionExpression',
  'KeyConditionExpression',
  'FilterExpression',
  'ProjectionExpression',
] as const;

let recording: Sizes | undefined;

function record(input: Record<string, unknown>): void {
  if (!recording) return;
  for (const name of EXPRESSIONS) {
    const expression = input[name];
    if (typeof expression === 'string') {
      recording.expression = Math.max(recording.expression, Buffer.byteLength(expression));
    }
  }
  const namesAndValues = JSON.stringify([
    input.ExpressionAttributeNames ?? {},
    input.ExpressionAttributeValues ?? {},
  ]);
  recording.namesAndValues = Math.max(recording.namesAndValues, Buffer.byteLength(namesAndValues));
}

dynamo.middlewareStack.add(
  (next) => async (args) => {
    const input = args.input as Record<string, unknown>;
    record(input);
    for (const action of (input.TransactItems as Record<string, Record<string, unknown>>[] | undefined) ??
      []) {
      for (const part of Object.values(action)) record(part);
    }
    return next(args);
  },
  { step: 'initialize', name: 'expressionSizes', priority: 'low' },
);

async function sizesOf(work: () => Promise<unknown>): Promise<Sizes> {
  recording = { expression: 0, namesAndValues: 0 };
  try {
    await work();
    return recording;
  } finally {
    recording = undefined;
  }
}

/** The heaviest item of each shape a change wrote (bytes, the larger of before and after). */
function heaviestByShape(writes: { shape: string; bytesBefore: number; bytesAfter: number }[]) {
  const heaviest = new Map<string, number>();
  for (const write of writes) {
    const shape = generalised(write.shape);
    heaviest.set(shape, Math.max(heaviest.get(shape) ?? 0, write.bytesBefore, write.bytesAfter));
  }
  return heaviest;
}

/**
 * A shape with its uuids, keyed values (64 hex characters), keyed search terms (`p#` and 11 base64url characters a
 * character of the term: lib/data/index/keyed.ts) and numbers generalised, so that one item of the two accounts has
 * one name.
 */
const generalised = (shape: string) =>
  shape
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<uuid>')
    .replace(/[0-9a-f]{64}/g, '<keyed>')
    .replace(/p#[A-Za-z0-9_-]{11,}#/g, 'p#<term>#')
    .replace(/\d+/g, 'N');

async function measured(work: () => Promise<unknown>) {
  let sizes: Sizes = { expression: 0, namesAndValues: 0 };
  const writes = await measureItemWrites(async () => {
    sizes = await sizesOf(work);
  }, []);
  return { sizes, items: heaviestByShape(writes) };
}

describe('nothing grows with the account', () => {
  let small: Record<string, Awaited<ReturnType<typeof measured>>>;
  let large: typeof small;
  beforeAll(async () => {
    small = await changesOn(gateway, SMALL, measured);
    large = await changesOn(gateway, LARGE, measured);
  }, 240_000);

  it('the largest expression of each change is the same at 3 agents, 2 stages and 1 currency as at 1,000 agents, 20 stages and 5 currencies', () => {
    for (const [change, { sizes }] of Object.entries(large)) {
      const base = small[change]?.sizes ?? { expression: 0, namesAndValues: 0 };
      expect(base.expression, change).toBeGreaterThan(0);
      // Ids of 4 digits instead of 1 in a few names and values; a clause per agent, stage or currency is far more.
      expect(sizes.expression, `${change}: expression`).toBeLessThanOrEqual(base.expression + 16);
      expect(sizes.namesAndValues, `${change}: names and values`).toBeLessThanOrEqual(
        base.namesAndValues + 48,
      );
      expect(sizes.expression, change).toBeLessThan(4096);
    }
  });

  it('every item a change writes weighs the same at 3 agents, 2 stages and 1 currency as at 1,000 agents, 20 stages and 5 currencies', () => {
    for (const [change, { items }] of Object.entries(large)) {
      const base = small[change]?.items ?? new Map<string, number>();
      for (const [shape, bytes] of items) {
        if (/^TICKET_STATS#<uuid>#counts \/ #N$/.test(shape)) {
          // A counts shard (32 of them) holds a counter per status, priority and their pairs that its tickets met:
          // an update writes a random one (lib/data/index/commit.ts), so its weight is that shard's history, not the
          // account's size. Bounded by those values: within the one KB the capacity model charges it (2 WU).
          expect(bytes, `${change}: ${shape}`).toBeLessThanOrEqual(1024);
          continue;
        }
        // A few ids of 4 digits instead of 1 (a ticket's event names its assignee's).
        expect(bytes, `${change}: ${shape}`).toBeLessThanOrEqual((base.get(shape) ?? 0) + 256);
      }
    }
  });
});
