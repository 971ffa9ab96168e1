import { figuresOf, type RequestFigures } from '#test/support/dynamo-figures.ts';
import type { Floor, FloorOp } from './floor.ts';
import { median, round, type Timing, time } from './stats.ts';

export const log = (line: string) => process.stdout.write(`${line}\n`);

/** Which floor stands for an operation when computing a budget. */
const FLOOR_OF: Record<string, FloorOp> = {
  GetItem: 'GetItem',
  Query: 'Query',
  BatchGetItem: 'Query',
  UpdateItem: 'UpdateItem',
  PutItem: 'UpdateItem',
  TransactWriteItems: 'TransactWriteItems',
  BatchWriteItem: 'TransactWriteItems',
};

/**
 * Σ over round trips of the floor of the slowest operation in each: what a request of these round trips costs at
 * least. `transactionMs`, when given, stands for its TransactWriteItems (one of the request's own size).
 */
export function floorMsOf(floor: Floor, operations: string[][], transactionMs?: number): number {
  const of = (op: string) =>
    op === 'TransactWriteItems' && transactionMs !== undefined
      ? transactionMs
      : floor[FLOOR_OF[op] ?? 'Query'].p50;
  return round(operations.reduce((sum, rt) => sum + Math.max(...rt.map(of)), 0));
}

export interface EndpointResult extends Timing {
  name: string;
  roundTrips: number;
  operations: string[][];
  itemsRead: number;
  itemsWritten: number;
  capacity: number;
  /** Write units computed from the requests (test/support/dynamo-figures.ts: DynamoDB Local under-reports them). */
  writeUnits: number;
  budgetMs: number;
  withinBudget: boolean;
}

/**
 * Measures a request in-process: `n` sequential calls after a warm-up, with the DynamoDB figures of each call
 * (round trips, items, capacity; their medians are reported). Budget = 1.3 × Σ over round trips of the floor of
 * the slowest operation in that round trip.
 */
export function measurer(floor: Floor, iterations: number) {
  const budgetOf = (ops: string[][]) => round(1.3 * floorMsOf(floor, ops));
  return async function endpoint(
    name: string,
    fn: (i: number) => Promise<{ statusCode: number } | unknown>,
    n = iterations,
  ): Promise<EndpointResult> {
    const figures: RequestFigures[] = [];
    const timing = await time(
      async (i) => {
        const f = await figuresOf(() => fn(i));
        if (i >= 0) figures.push(f);
      },
      n,
      Math.min(10, n),
    );
    const pick = (k: 'roundTrips' | 'itemsRead' | 'itemsWritten' | 'capacity' | 'writeUnits') =>
      round(median(figures.map((f) => f[k])));
    const operations = figures.find((f) => f.roundTrips === pick('roundTrips'))?.operations ?? [];
    const budgetMs = budgetOf(operations);
    const result: EndpointResult = {
      name,
      ...timing,
      roundTrips: pick('roundTrips'),
      operations,
      itemsRead: pick('itemsRead'),
      itemsWritten: pick('itemsWritten'),
      capacity: pick('capacity'),
      writeUnits: pick('writeUnits'),
      budgetMs,
      withinBudget: timing.p50 <= budgetMs,
    };
    log(
      `  ${name.padEnd(44)} p50 ${String(result.p50).padStart(7)} ms  p99 ${String(result.p99).padStart(7)} ms  RT ${result.roundTrips}  read ${result.itemsRead} (${result.capacity} RU)  written ${result.itemsWritten}  budget ${budgetMs} ms ${result.withinBudget ? 'ok' : 'MISSED'}`,
    );
    return result;
  };
}

export type Measure = ReturnType<typeof measurer>;

/** Throws unless the handler answered `status`: a bench must not time error answers. */
export async function expectStatus(answer: Promise<{ statusCode: number; body: string }>, status: number) {
  const result = await answer;
  if (result.statusCode !== status)
    throw new Error(`expected ${status}: ${result.statusCode} ${result.body}`);
  return result;
}
