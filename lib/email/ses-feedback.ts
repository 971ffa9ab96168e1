import type { SNSEvent } from 'aws-lambda';
import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import { findAccountIdByAddress } from '#lib/data/mail/addresses.ts';
import { suppressAddress } from '#lib/data/outbox.ts';
import { logMail } from '#lib/log.ts';
import { splitAddress } from './addresses.ts';
import { bounced } from './outbox.ts';
import { tokensOfRecipients } from './tokens.ts';

/**
 * SES's delivery feedback deployed (docs/email.md, "Sending"): the outbox's configuration set publishes bounces and
 * complaints to the stage's feedback topic, whose function hands each notification here. Locally the same news
 * comes back as a delivery report to the `+<ref>.<n>` envelope sender (receive.ts), and both end in `bounced`:
 * SES keeps that envelope sender as the notification's `mail.source`, so it names the account (its address), the
 * ticket and the mail exactly as a report mailed back does, and is verified the same way: only a source whose
 * tag is the service's (lib/email/tokens.ts) counts; any other (a guessed address) changes nothing.
 */

/** The part of an SES event notification (v2 configuration set, SNS destination) read here. */
export interface SesNotification {
  eventType?: string;
  notificationType?: string;
  mail?: { source?: string; destination?: string[] };
  bounce?: { bounceType?: string; bouncedRecipients?: { emailAddress?: string }[] };
  complaint?: { complainedRecipients?: { emailAddress?: string }[] };
}

export type FeedbackOutcome =
  | 'bounced'
  | 'complained'
  /** Its source is no tagged envelope sender of the account's: nothing changes. */
  | 'unverified'
  /** A transient bounce (SES tries again itself), another event type, or no account of this service. */
  | 'ignored';

/**
 * One notification: a permanent bounce marks the mail's delivery `bounced` (`message.delivery_failed` for a
 * reply) and suppresses its recipient, as a delivery report mailed back does; a complaint suppresses the
 * complaining recipients (the mail was delivered: its delivery stays `sent`). Idempotent: SNS may deliver a
 * notification twice, and a mail already bounced is left as it is.
 */
export async function receiveSesFeedback(notification: SesNotification): Promise<FeedbackOutcome> {
  const type = notification.eventType ?? notification.notificationType;
  const source = notification.mail?.source?.trim().toLowerCase() ?? '';
  const accountId = source ? await findAccountIdByAddress(splitAddress(source).base) : undefined;
  if (!accountId) return 'ignored';
  if (type !== 'Bounce' && type !== 'Complaint') return 'ignored';
  const own = new Set((await getCachedAccountConfig(accountId))?.account.email?.addresses ?? []);
  const named = tokensOfRecipients(accountId, own, [source]).find((t) => t.mail !== undefined);
  if (!named) {
    logMail('feedback unverified', { accountId, type });
    return 'unverified';
  }
  if (type === 'Bounce') {
    // A transient bounce is SES's to retry; only a permanent one fails the delivery.
    if (notification.bounce?.bounceType !== 'Permanent') return 'ignored';
    const found = await bounced(accountId, named);
    // A mail this service no longer knows (purged, or the notification of another stack's): its recipients are
    // still suppressed, as the provider will refuse them.
    if (!found) {
      for (const r of notification.bounce.bouncedRecipients ?? []) {
        if (r.emailAddress) await suppressAddress(accountId, r.emailAddress.trim().toLowerCase(), 'bounced');
      }
    }
    return 'bounced';
  }
  for (const r of notification.complaint?.complainedRecipients ?? []) {
    if (r.emailAddress) await suppressAddress(accountId, r.emailAddress.trim().toLowerCase(), 'complained');
  }
  return 'complained';
}

/**
 * Every notification of an SNS delivery, one after the other (as receiveSesEvent takes an SES event's records): a
 * store failure throws (SNS delivers again; a notification handled twice changes nothing), an unreadable message
 * is counted and skipped. Answers how many of each outcome.
 */
export async function receiveSesFeedbackEvent(event: SNSEvent): Promise<Record<string, number>> {
  const counts: Record<string, number> = {
    notifications: 0,
    bounced: 0,
    complained: 0,
    unverified: 0,
    ignored: 0,
  };
  for (const record of event.Records ?? []) {
    counts.notifications = (counts.notifications ?? 0) + 1;
    let notification: SesNotification;
    try {
      notification = JSON.parse(record.Sns.Message) as SesNotification;
    } catch {
      counts.ignored = (counts.ignored ?? 0) + 1;
      continue;
    }
    const outcome = await receiveSesFeedback(notification);
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  }
  return counts;
}
