import type { AccountConfig } from '#lib/accounts/types.ts';
import { AckRefused, queueAck } from '#lib/data/outbox.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { splitAddress } from '../addresses.ts';
import { isOwnAddress, mailSubject, newMailId } from '../reply.ts';

/**
 * A ticket opened by mail gets one acknowledgement when the account asks for them (`email.acknowledge`): at most
 * one per ticket, at most 10 per sender per hour (lib/data/outbox.ts queueAck), never to the account's own
 * addresses. Answers whether it was queued.
 */
export async function acknowledge(
  accountId: string,
  config: AccountConfig,
  ticket: Ticket,
  sender: string,
): Promise<'queued' | 'already' | 'capped' | 'off'> {
  const from = config.account.email?.addresses[0];
  if (!config.account.email?.acknowledge || !from || isOwnAddress(config, sender)) return 'off';
  const subject = mailSubject({ reference: ticket.reference, subject: ticket.subject });
  try {
    await queueAck(accountId, ticket.uuid, splitAddress(sender).base, {
      text:
        `Thank you for writing. Your request is ticket ${ticket.reference}: an agent will answer you soon.\n\n` +
        'To add to it, reply to this mail.',
      email: {
        message_id: newMailId(`ack.${ticket.reference.toLowerCase()}`, from),
        from: { email: from, name: config.account.name },
        to: [sender],
        subject,
      },
    });
    return 'queued';
  } catch (error) {
    if (error instanceof AckRefused) return error.reason;
    throw error;
  }
}
