/**
 * The webhook dispatcher's items (docs/webhooks.md, "Items", "States", "At least once").
 *
 * - A **delivery** per (endpoint, event): `pending` until an attempt's outcome ends it (`succeeded`, `failed`).
 *   Created once (a conditional put: a stream record fanned out again creates nothing).
 * - A **pending** item per pending delivery, sorted by due time: what an endpoint has due now is one Query. An
 *   attempt's record moves it (or deletes it) in the attempt's own transaction.
 * - An **attempt** item per attempt, numbered by the endpoint's `attemptCount` in recording order: newest first is a
 *   descending Query, page n one range of numbers, and the total is the count (exact). The newest
 *   ATTEMPTS_KEPT are kept: recording attempt n deletes attempt n - ATTEMPTS_KEPT in the same transaction.
 * - The endpoint item carries the dispatcher's fields: the **due entry** (gsi2: one of DUE_SHARDS partitions,
 *   `<earliest due>#<acc>#<id>`) while it has pending deliveries, `dueVersion` (bumped by every writer of pending
 *   deliveries other than the lease holder, after its pending items landed), the **lease** (`leaseOwner`,
 *   `leaseUntil`: one runner works an endpoint at a time; while leased, the due entry says when the lease ends, so
 *   a dead runner's endpoint comes due again), and `attemptCount`.
 *
 * Why the due entry is never lost: a writer of pending items (fan-out, redeliver) writes them first, then bumps
 * `dueVersion` and lowers the due entry to its due when that is earlier and the endpoint is not leased. The lease
 * holder, on release, reads `dueVersion`, then the earliest pending item, and writes the due entry on the condition
 * that `dueVersion` is unchanged: a pending item it did not see was bumped for after its read, so it reads again.
 */

export {
  ATTEMPTS_KEPT,
  type AttemptPage,
  attemptCountOf,
  type DeliveryAttempt,
  listDeliveryAttempts,
} from './webhook-deliveries/attempts.ts';
export * from './webhook-deliveries/claims.ts';
export { type Delivery, type DeliveryState, getDelivery } from './webhook-deliveries/delivery.ts';
export * from './webhook-deliveries/leases.ts';
export type { PendingDelivery } from './webhook-deliveries/pending.ts';
export * from './webhook-deliveries/queue.ts';
export * from './webhook-deliveries/record.ts';
