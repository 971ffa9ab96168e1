import { accountOfEventItem, type EventSummary, eventSummaryOf } from '#lib/data/events.ts';
import { addDeliveries } from '#lib/data/webhook-deliveries.ts';
import { listEndpoints } from '#lib/data/webhooks/webhooks.ts';
import { logError } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';
import { subscribes } from './subscription.ts';

/**
 * The fan-out (docs/webhooks.md): the table's stream records → for each new event item, a pending delivery to
 * every enabled endpoint of its account that subscribes to its type. Idempotent (a delivery is created once), so
 * a batch handed over again after a crash, a timeout or a partial failure creates nothing twice. The deployed
 * stream function (functions/webhooks-stream.ts) and `npm start`'s stream reader (infra/local/stream-reader.ts)
 * both call it; it reads no stream itself.
 */

/** A stream record as both readers hand it over: its NEW_IMAGE unmarshalled (plain values). */
export interface StreamRecord {
  eventName?: string | undefined;
  /** The record's sequence number in its shard: what a failed record is reported by. */
  sequenceNumber: string;
  newImage?: Record<string, unknown> | undefined;
}

export interface FanOutResult {
  /** Event items among the records. */
  events: number;
  /** Deliveries created. */
  deliveries: number;
  /** Sequence numbers of the records whose fan-out failed (to be handed over again). */
  failed: string[];
}

/**
 * Fan-out jobs at once across the batch: one account's read of its endpoints, or one endpoint's deliveries of the
 * batch; and the batch's writes in flight at once, whatever job they are of (each a delivery and its pending item in
 * one transaction). An account's endpoints no longer wait for each other, and the store sees at most 32 writes of the
 * batch at once (before: 16 per account, 8 accounts at once; one account alone 16).
 */
export const FAN_OUT_CONCURRENCY = 8;
export const FAN_OUT_WRITES = 32;

/** A bound on jobs at once: `run(job)` starts it when fewer than `n` run, else when one ends. */
function bounded(n: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(job: () => Promise<T>): Promise<T> => {
    if (running >= n) await new Promise<void>((go) => waiting.push(go));
    else running++;
    try {
      return await job();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/**
 * The event a record inserts, with its account, or undefined for every other record, and for an imported change's
 * event (spec/decisions.md, "Imports": webhook endpoints receive none of those, only the job's `import.completed`
 * or `import.failed`).
 */
export function insertedEvent(record: StreamRecord): { accountId: string; event: EventSummary } | undefined {
  if (record.eventName !== 'INSERT' || !record.newImage) return undefined;
  const event = eventSummaryOf(record.newImage);
  const accountId = accountOfEventItem(record.newImage);
  return event && !event.imported && accountId ? { accountId, event } : undefined;
}

export async function fanOut(records: readonly StreamRecord[]): Promise<FanOutResult> {
  // Per account, in stream order: one read of its endpoints and one due-entry write per endpoint for the batch.
  const byAccount = new Map<string, { events: EventSummary[]; sequenceNumbers: string[] }>();
  for (const record of records) {
    const inserted = insertedEvent(record);
    if (!inserted) continue;
    const group = byAccount.get(inserted.accountId) ?? { events: [], sequenceNumbers: [] };
    group.events.push(inserted.event);
    group.sequenceNumbers.push(record.sequenceNumber);
    byAccount.set(inserted.accountId, group);
  }
  const result: FanOutResult = { events: 0, deliveries: 0, failed: [] };
  const run = bounded(FAN_OUT_CONCURRENCY);
  const write = bounded(FAN_OUT_WRITES);
  await Promise.all(
    [...byAccount].map(async ([accountId, group]) => {
      result.events += group.events.length;
      try {
        result.deliveries += await fanOutAccount(accountId, group.events, run, write);
      } catch (error) {
        logError(error);
        result.failed.push(...group.sequenceNumbers);
      }
    }),
  );
  return result;
}

/**
 * One account's events of a batch to its endpoints, the endpoints in parallel (within the fan-out's bound): answers
 * how many deliveries were created. Every endpoint is tried even when another fails (the batch is handed over
 * again, and what landed is not made twice); then the first failure is thrown.
 */
async function fanOutAccount(
  accountId: string,
  events: EventSummary[],
  run: ReturnType<typeof bounded>,
  write: ReturnType<typeof bounded>,
): Promise<number> {
  const endpoints = (await run(() => listEndpoints(accountId))).filter((e) => e.enabled);
  const outcomes = await Promise.allSettled(
    endpoints.map((endpoint) => {
      const wants = subscribes(endpoint);
      const wanted = events.filter((e) => wants(e.type));
      return wanted.length > 0
        ? run(() => addDeliveries(accountId, endpoint.id, wanted, nowMillis(), write))
        : Promise.resolve(0);
    }),
  );
  const failure = outcomes.find((o) => o.status === 'rejected');
  if (failure) throw failure.reason;
  return outcomes.reduce((n, o) => n + (o.status === 'fulfilled' ? o.value : 0), 0);
}
