import { accountOfEventItem, type EventSummary, eventSummaryOf } from '#lib/data/events.ts';
import { addDeliveries } from '#lib/data/webhook-deliveries.ts';
import { listEndpoints } from '#lib/data/webhooks.ts';
import { logError } from '#lib/log.ts';
import { subscribes } from './subscription.ts';

/**
 * The fan-out (docs/webhooks.md): the table's stream records → for each new event item, a pending delivery to
 * every enabled endpoint of its account that subscribes to its type. Idempotent (a delivery is created once), so
 * a batch handed over again after a crash, a timeout or a partial failure creates nothing twice. The deployed
 * stream function (functions/webhooks-stream.ts) and `npm start`'s stream reader (infra/local/webhooks.ts) both
 * call it; it reads no stream itself.
 */

/** A stream record as both readers hand it over: its NEW_IMAGE unmarshalled (plain values). */
export interface StreamRecord {
  eventName?: string | undefined;
  /** The record's sequence number in its shard: what a failed record is reported by. */
  sequenceNumber: string;
  newImage?: Record<string, unknown> | undefined;
}

export interface FanOutOptions {
  /** Only events of the accounts this accepts (tests running a dispatcher on a shared table); all by default. */
  accepts?: ((accountId: string) => boolean) | undefined;
}

export interface FanOutResult {
  /** Event items among the records (of accepted accounts). */
  events: number;
  /** Deliveries created. */
  deliveries: number;
  /** Sequence numbers of the records whose fan-out failed (to be handed over again). */
  failed: string[];
}

/** Accounts fanned out at once. */
const ACCOUNT_CONCURRENCY = 8;

/** The event a record inserts, with its account, or undefined for every other record. */
export function insertedEvent(record: StreamRecord): { accountId: string; event: EventSummary } | undefined {
  if (record.eventName !== 'INSERT' || !record.newImage) return undefined;
  const event = eventSummaryOf(record.newImage);
  const accountId = accountOfEventItem(record.newImage);
  return event && accountId ? { accountId, event } : undefined;
}

export async function fanOut(
  records: readonly StreamRecord[],
  options: FanOutOptions = {},
): Promise<FanOutResult> {
  // Per account, in stream order: one read of its endpoints and one due-entry write per endpoint for the batch.
  const byAccount = new Map<string, { events: EventSummary[]; sequenceNumbers: string[] }>();
  for (const record of records) {
    const inserted = insertedEvent(record);
    if (!inserted || (options.accepts && !options.accepts(inserted.accountId))) continue;
    const group = byAccount.get(inserted.accountId) ?? { events: [], sequenceNumbers: [] };
    group.events.push(inserted.event);
    group.sequenceNumbers.push(record.sequenceNumber);
    byAccount.set(inserted.accountId, group);
  }
  const result: FanOutResult = { events: 0, deliveries: 0, failed: [] };
  const accounts = [...byAccount];
  let next = 0;
  const lane = async () => {
    while (next < accounts.length) {
      const [accountId, group] = accounts[next++] as [
        string,
        { events: EventSummary[]; sequenceNumbers: string[] },
      ];
      result.events += group.events.length;
      try {
        result.deliveries += await fanOutAccount(accountId, group.events);
      } catch (error) {
        logError(error);
        result.failed.push(...group.sequenceNumbers);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ACCOUNT_CONCURRENCY, accounts.length) }, lane));
  return result;
}

/** One account's events of a batch to its endpoints: answers how many deliveries were created. */
async function fanOutAccount(accountId: string, events: EventSummary[]): Promise<number> {
  const endpoints = (await listEndpoints(accountId)).filter((e) => e.enabled);
  let created = 0;
  for (const endpoint of endpoints) {
    const wants = subscribes(endpoint);
    const wanted = events.filter((e) => wants(e.type));
    if (wanted.length > 0) created += await addDeliveries(accountId, endpoint.id, wanted);
  }
  return created;
}
