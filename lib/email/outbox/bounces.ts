import { getOutboxItem, markBounced, outboxItemKey, suppressAddress } from '#lib/data/outbox.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import { sentMailOf } from '../reply.ts';
import type { MailToken } from '../tokens.ts';
import { deliveryFailedEvent } from './send.ts';

/**
 * A delivery report for mail the service sent: it comes back to the envelope sender whose verified token
 * (lib/email/tokens.ts) names the ticket and the mail (`<reference>.<message number>` or `<reference>.ack`). The
 * mail's delivery becomes `bounced` (`message.delivery_failed` for a reply) and its recipient is suppressed.
 * Answers the ticket and message it concerned, or undefined when the account has no such mail (any more).
 */
export async function bounced(
  accountId: string,
  named: MailToken,
): Promise<{ ticketUuid: string; messageId: string | null } | undefined> {
  if (named.mail === undefined) return undefined;
  const ticket = (await findTicket(accountId, named.reference))?.entity;
  if (!ticket) return undefined;
  const key = outboxItemKey(accountId, ticket.uuid, named.mail);
  const held = await getOutboxItem(key);
  if (!held) return undefined;
  const message = named.mail === 'ack' ? undefined : (held.item as unknown as Message);
  const to = held.item.email ? sentMailOf(held.item).to?.[0] : undefined;
  if (held.delivery.status === 'sent') {
    await markBounced(
      accountId,
      key,
      held.delivery,
      message ? [deliveryFailedEvent(message, { ...held.delivery, status: 'bounced' }, 'bounced')] : [],
    );
  }
  if (to) await suppressAddress(accountId, to, 'bounced');
  return { ticketUuid: ticket.uuid, messageId: message?.id ?? null };
}
