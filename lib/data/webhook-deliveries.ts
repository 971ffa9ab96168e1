/**
 * The webhook dispatcher's items (docs/webhooks.md, "Items", "States", "At least once").
 *
 * - A **delivery** per (endpoint, event): `pending` until an attempt's outcome ends it (`succeeded`, `failed`).
 *   Created once (a conditional put: a stream record fanned out again creates nothing).
 * - A **pending** item per pending delivery, sorted by due time: what an endpoint has due now is one Query. An
 *   attempt's record moves it (or deletes it) in the attempt's own transaction.
 * - An **attempt** item per attempt, keyed by its start, its delivery and its number among the delivery's attempts
 *   (nothing shared by the endpoint's records: they go out concurrently): newest first is a descending Query. The
 *   log's counts, one per lane of the runner's loop, are moved in each record's transaction: the total is their
 *   sum (exact). The newest ATTEMPTS_KEPT are kept: the lease holder drops the oldest, counted off, once
 *   TRIM_BATCH more are there.
 * - The endpoint item carries the dispatcher's fields: the **due entry** (gsi2: one of DUE_SHARDS partitions,
 *   `<earliest due>#<acc>#<id>`) while it has pending deliveries, `dueVersion` (bumped by every writer of pending
 *   deliveries other than the lease holder, after its pending items landed), the **lease** (`leaseOwner`,
 *   `leaseUntil`: one runner works an endpoint at a time; while leased, the due entry says when the lease ends, so
 *   a dead runner's endpoint comes due again), its marks (`lastSuccessAt`, `failingSince`: marks.ts) and the slow lane
 *   (`slowUntil`), written apart from the records, only when they change.
 *
 * Why the due entry is never lost: a writer of pending items (fan-out, redeliver) writes them first, then bumps
 * `dueVersion` and lowers the due entry to its due when that is earlier and the endpoint is not leased. The lease
 * holder, on release, reads `dueVersion`, then the earliest pending item, and writes the due entry on the condition
 * that `dueVersion` is unchanged: a pending item it did not see was bumped for after its read, so it reads again.
 */

export {
  ATTEMPTS_KEPT,
  type AttemptPage,
  attemptTotal,
  type DeliveryAttempt,
  LOG_LANES,
  listDeliveryAttempts,
  TRIM_BATCH,
  trimAttempts,
} from './webhook-deliveries/attempts.ts';
export * from './webhook-deliveries/claims.ts';
export { type Delivery, type DeliveryState, getDelivery } from './webhook-deliveries/delivery.ts';
export * from './webhook-deliveries/leases.ts';
export * from './webhook-deliveries/marks.ts';
export type { PendingDelivery } from './webhook-deliveries/pending.ts';
export * from './webhook-deliveries/queue.ts';
export * from './webhook-deliveries/record.ts';
