import type { DueCursors } from '#lib/data/index/due.ts';
import { sentMailIdPut } from '#lib/data/mail/message-ids.ts';
import {
  ClaimLost,
  claimOutbox,
  type Delivery,
  isSuppressed,
  type OutboxEntry,
  type OutboxOutcome,
  recordOutbox,
} from '#lib/data/outbox.ts';
import { type Message, presentMessage } from '#lib/tickets/messages/message.ts';
import { nowMillis } from '#lib/time.ts';
import { composeMail } from '../compose.ts';
import { sentMailOf } from '../reply.ts';
import type { Sender } from '../senders.ts';
import { build } from './build.ts';
import { type SendPace, THROTTLE_HOLD_MS } from './pace.ts';

/** One due mail: claimed, built, handed to the Sender, and its outcome recorded under the claim. */

/** The sending retry schedule, seconds (EMAIL_RETRY_SCHEDULE replaces it; operations.md, "E-mail locally"). */
export const DEFAULT_EMAIL_RETRY_SCHEDULE = [60, 300, 900, 3_600, 7_200, 14_400];

export function emailRetrySchedule(): number[] {
  const raw = process.env.EMAIL_RETRY_SCHEDULE;
  if (raw === undefined || raw.trim() === '') return DEFAULT_EMAIL_RETRY_SCHEDULE;
  const steps = raw.split(',').map((s) => Number(s.trim()));
  if (steps.some((s) => !Number.isFinite(s) || s < 0)) {
    throw new Error(`EMAIL_RETRY_SCHEDULE must be seconds, comma-separated (e.g. 1,2,3), got "${raw}"`);
  }
  return steps;
}

/** How long a claim lasts: a send (30 s at most) and its record, with room. */
export const OUTBOX_CLAIM_MS = 60_000;

export interface OutboxRunOptions {
  sender: Sender;
  /** The due shards this runner reads (all by default). */
  shards?: readonly number[] | undefined;
  /** Mails served per pass, shared between the accounts due (lib/fair-share.ts; default 50). */
  limit?: number;
  /** Mails sent at once (default: outboxConcurrency of the pace's rate). */
  concurrency?: number;
  /** Due keys read per shard and pass (lib/data/index/due.ts, dueWindow; default DUE_WINDOW_PER_SHARD). */
  windowPerShard?: number;
  /** Where this runner's reading of the due index stands (dueWindow): kept across a run's passes. */
  cursors?: DueCursors;
  /** The sending quota's pace (pace.ts), one for the runner's passes; none: unpaced. */
  pace?: SendPace;
  /** When the run ends (epoch ms): no mail is claimed that the pace would hold past it. */
  until?: number;
  /** How long a claim lasts (default OUTBOX_CLAIM_MS). */
  claimMs?: number;
  /** This runner's name in claims (a random one by default). */
  owner?: string;
  onError?: ((error: unknown) => void) | undefined;
  /** Between the send and its record (tests: a runner that dies there). */
  afterSend?: ((entry: OutboxEntry) => Promise<void>) | undefined;
}

/** What became of a due mail; `throttled`: put back with no attempt counted (the provider refused its rate). */
export type SendOutcome = 'sent' | 'retrying' | 'failed' | 'skipped' | 'throttled';

/**
 * Claims, builds, sends and records one due mail, once the pace allows a send (before the claim: a hold never
 * keeps a claimed mail waiting); undefined when the run ends before it would (nothing claimed).
 */
export async function sendOne(
  entry: OutboxEntry,
  options: OutboxRunOptions & { owner: string },
): Promise<SendOutcome | undefined> {
  if (options.pace && !(await options.pace.take(options.until))) return undefined;
  const now = nowMillis();
  const claimed = await claimOutbox(entry, options.owner, now + (options.claimMs ?? OUTBOX_CLAIM_MS), now);
  if (!claimed) return 'skipped';
  const attempts = claimed.delivery.attempts + 1;
  const failed = (error: string, message?: Message): OutboxOutcome => {
    const delivery: Delivery = { ...claimed.delivery, status: 'failed', attempts };
    return { delivery, error, events: message ? [deliveryFailedEvent(message, delivery, error)] : undefined };
  };
  // The ticket, its mail chain and the suppression of the recipient: read at once (one round trip).
  const to = String(sentMailOf(claimed.item).to[0]);
  const [built, suppressed] = await Promise.all([
    build(entry.accountId, claimed.kind, claimed.item),
    isSuppressed(entry.accountId, to),
  ]);
  if (!built) return record(entry, options.owner, failed('ticket_gone'), 'failed');
  const { mail } = built;
  if (suppressed) {
    return record(entry, options.owner, failed('suppressed: the address bounced', built.message), 'failed');
  }
  const raw = await composeMail(mail);
  const result = await options.sender.send({
    envelopeFrom: mail.envelopeFrom,
    to: mail.to,
    messageId: mail.messageId,
    raw,
  });
  await options.afterSend?.(entry);
  if (!result.ok && result.throttled) {
    // The provider's rate, not the mail: due again when the runner's hold ends, its attempts as they were.
    const again = options.pace?.throttled() ?? nowMillis() + THROTTLE_HOLD_MS;
    const outcome = { delivery: claimed.delivery, nextAtMs: again, error: `throttled: ${result.error}` };
    return record(entry, options.owner, outcome, 'throttled');
  }
  if (result.ok) {
    options.pace?.accepted();
    const delivery: Delivery = {
      status: 'sent',
      attempts,
      provider_message_id: result.providerMessageId,
    };
    const ids = [...new Set([mail.messageId, result.providerMessageId])];
    return record(
      entry,
      options.owner,
      {
        delivery,
        // An agent's reply by mail shows the In-Reply-To of the mail it came as (`email` is that mail).
        inReplyTo: claimed.item.outgoing ? undefined : mail.inReplyTo,
        items: ids.map((id) => sentMailIdPut(entry.accountId, id, built.mailId)),
      },
      'sent',
    );
  }
  const step = emailRetrySchedule()[attempts - 1];
  if (!result.permanent && step !== undefined) {
    return record(
      entry,
      options.owner,
      {
        delivery: { ...claimed.delivery, status: 'queued', attempts },
        nextAtMs: now + step * 1000,
        error: result.error,
      },
      'retrying',
    );
  }
  return record(entry, options.owner, failed(result.error, built.message), 'failed');
}

async function record(
  entry: OutboxEntry,
  owner: string,
  outcome: OutboxOutcome,
  result: SendOutcome,
): Promise<SendOutcome> {
  try {
    await recordOutbox(entry, owner, outcome);
    return result;
  } catch (error) {
    // The claim ran out meanwhile (a stalled store): the runner holding it now decides.
    if (error instanceof ClaimLost) return 'skipped';
    throw error;
  }
}

/** The `message.delivery_failed` event of a reply whose mail failed or bounced. */
export function deliveryFailedEvent(message: Message, delivery: Delivery, reason: string) {
  return {
    type: 'message.delivery_failed',
    object: presentMessage({ ...message, email: { ...message.email, delivery } }),
    extra: { reason: reason.slice(0, 300) },
    version: 1,
  };
}
