/**
 * The outbox runner (docs/email.md, "Sending"): reads the mail due (the keys-only due index, never a Scan),
 * claims each, builds it (threading headers from the ticket's mail chain), hands it to the Sender, and records
 * the outcome under its claim: sent (its Message-IDs claimed for the account, so replies thread), due again after
 * a temporary refusal (the schedule), or failed (a permanent refusal, the schedule run out, a suppressed address)
 * with `message.delivery_failed`. At least once: a runner that dies between the send and the record leaves the
 * claim to run out, and the mail is sent again then, with the same Message-ID.
 *
 * One concern a file under lib/email/outbox/: the passes (runner.ts); one mail claimed, sent and recorded, with
 * the retry schedule (send.ts); the mail built from its item and ticket (build.ts); a ticket's acknowledgement
 * queued (acknowledge.ts); a delivery report for sent mail (bounces.ts).
 */
export { acknowledge } from './outbox/acknowledge.ts';
export { bounced } from './outbox/bounces.ts';
export { type OutboxPass, outboxPass, runOutbox } from './outbox/runner.ts';
export {
  DEFAULT_EMAIL_RETRY_SCHEDULE,
  emailRetrySchedule,
  OUTBOX_CLAIM_MS,
  type OutboxRunOptions,
  type SendOutcome,
  sendOne,
} from './outbox/send.ts';
