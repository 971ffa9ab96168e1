import { type MailIdRecord, mailIdPut } from '#lib/data/mail/message-ids.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { acknowledge } from '../outbox.ts';
import { isParty } from '../trust.ts';
import { type Decision, type Receipt, refParty, type Target } from './decision.ts';

/**
 * The Message-ID a received mail claims for its account (docs/email.md): claimed in its message's commit, so the
 * same mail makes one message; a claim already held answers the mail's outcome without writing it again.
 */

/** In the message's commit: the Message-ID's claim, and the mail's first person references (the rest after it). */
export function claimActions(r: Receipt, target: Target, message: Message, t: Ticket): CommitAction[] {
  return [
    mailIdPut(r.accountId, r.claimId, {
      ticketUuid: t.uuid,
      messageNumber: message.number,
      messageId: message.id,
      inboundId: r.mail.inboundId,
    }),
    ...r.refs.inCommit(t, refParty(target, t)),
  ];
}

/**
 * A mail whose claim is held already. Processed again after a crash that came after its commit: what follows the
 * commit is done again (each harmless twice): the person references past the commit's, and a new ticket's
 * acknowledgement (at most once).
 */
export async function processedAgain(r: Receipt, held: MailIdRecord): Promise<Decision> {
  const { accountId, automatic, from } = r;
  const opens = held.messageNumber === 1;
  if (held.inboundId === r.mail.inboundId && (r.refs.spills || (opens && !automatic))) {
    const t = (await findTicket(accountId, held.ticketUuid))?.entity;
    if (t) {
      // A new ticket (or a follow-up) makes the people its mail names parties; a reply, as its sender may.
      await r.refs.afterCommit(
        t,
        opens || r.agent !== undefined || (await isParty(accountId, t, from.email)),
      );
      if (opens && !automatic) await acknowledge(accountId, r.config, t, from.email);
    }
  }
  return automatic
    ? r.automaticOutcome(held.ticketUuid, held.messageId)
    : duplicateOf(held, r.mail.inboundId);
}

/** A claim already held: by this very mail (processed again after a crash), its first outcome; else a duplicate. */
export function duplicateOf(held: MailIdRecord, inboundId: string): Decision {
  if (held.inboundId === inboundId) {
    return {
      outcome: held.messageNumber === 1 ? 'new_ticket' : 'threaded',
      reason: 'processed_again',
      ticketUuid: held.ticketUuid,
      messageId: held.messageId,
    };
  }
  return {
    outcome: 'duplicate',
    reason: 'message_id',
    ticketUuid: held.ticketUuid,
    messageId: held.messageId,
  };
}
