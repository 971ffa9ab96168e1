/**
 * The outbox in the store (docs/email.md, "Sending"; docs/data-model.md, "Items"). A mail to send is an item in
 * the keys-only due index (gsi2, `EMAIL_DUE#<shard>`) until it is sent or given up: a reply's mail is its message
 * item (the entry written in the message's own commit, so a committed reply is a queued mail, whatever happens
 * next), an acknowledgement its own item. Its state is the item's `email.delivery`. A runner claims an entry
 * (conditional: queued, due, no live claim; the entry moves to the claim's end, so a runner that dies leaves it
 * due again then), sends, and records the outcome on the condition that it still holds the claim. Nothing here
 * knows SMTP, SES or MIME.
 *
 * One concern a file under lib/data/outbox/: the item, its delivery and reads of one (item.ts); the due read, the
 * claim, the outcome and a bounce (sending.ts); acknowledgements and their cap (acks.ts); suppressed addresses
 * (suppressions.ts); what an erasure does to a person's mail and address (erasure.ts).
 */
export { ACKS_PER_SENDER_HOUR, AckRefused, ackItem, queueAck } from './outbox/acks.ts';
export { eraseAddressOutbox, OutboxBusy, outboxUnchanged, withdrawnFromOutbox } from './outbox/erasure.ts';
export {
  type ClaimedMail,
  type Delivery,
  type DeliveryStatus,
  getOutboxItem,
  isOutboxItem,
  type OutboxKind,
  outboxAttributes,
  outboxItemKey,
  outboxState,
  QUEUED,
} from './outbox/item.ts';
export {
  ClaimLost,
  claimOutbox,
  dueOutbox,
  markBounced,
  type OutboxEntry,
  type OutboxOutcome,
  recordOutbox,
  releaseOwnClaims,
} from './outbox/sending.ts';
export { isSuppressed, liftSuppression, suppressAddress } from './outbox/suppressions.ts';
