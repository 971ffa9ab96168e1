import { createTicketFrom } from '#lib/tickets/create-ticket.ts';
import { descriptionMessage } from '#lib/tickets/messages/message.ts';
import { acknowledge } from '../outbox.ts';
import { claimActions } from './claim.ts';
import { type Decision, type Receipt, refParty, type Target } from './decision.ts';
import { bodyOf, mailFields } from './mail-fields.ts';

/**
 * A mail that opens a ticket (docs/email.md): the ticket, its description the mail, with the claim in its commit;
 * then the person references past the commit's, and the acknowledgement to its sender.
 */
export async function openTicket(r: Receipt, target: Target): Promise<Decision> {
  const { accountId, parsed, from } = r;
  const created = await createTicketFrom(
    accountId,
    {
      subject: parsed.subject || '(no subject)',
      description: bodyOf(parsed),
      requester_email: from.email,
      requester_name: from.name || undefined,
      priority: undefined,
      category_id: undefined,
      category_slug: undefined,
      channel: 'email',
      custom_fields: undefined,
    },
    {
      descriptionEmail: mailFields(r, 'new_ticket'),
      moreItems: (t) => claimActions(r, target, descriptionMessage(t), t),
      oversizedField: 'body',
    },
  );
  await r.refs.afterCommit(created, refParty(target, created));
  await acknowledge(accountId, r.config, created, from.email);
  const messageId = descriptionMessage(created).id;
  return { outcome: 'new_ticket', reason: 'new_ticket', ticketUuid: created.uuid, messageId };
}
