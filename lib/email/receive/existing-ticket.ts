import { AutomaticNotThreaded, postParsedMessage } from '#lib/tickets/messages/post.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { claimActions } from './claim.ts';
import { type Decision, type Receipt, refParty, type Target } from './decision.ts';
import { bodyOf, mailFields } from './mail-fields.ts';

/**
 * A mail that threads into one of the account's tickets (docs/email.md): its message, with the claim in its
 * commit (a follow-up when the ticket is closed), then the person references past the commit's. Answers nothing
 * when the mail is to open a ticket of its sender's own instead.
 */
export async function postOnTicket(
  r: Receipt,
  target: Target,
  ticket: Ticket,
): Promise<Decision | undefined> {
  const { accountId, agent, automatic, from } = r;
  try {
    const posted = await postParsedMessage(
      accountId,
      ticket.uuid,
      {
        body: bodyOf(r.parsed),
        visibility: 'public',
        author: agent ? 'agent' : 'requester',
        agent_id: agent?.id,
        status: undefined,
      },
      {
        channel: 'email',
        mail: mailFields(r, target.rule),
        items: (message, t) => claimActions(r, target, message, t),
        automatic: automatic !== null || !target.party,
        // An end user writes in their own name; the requester as the ticket knows them.
        sender:
          agent || ticket.requester.email?.toLowerCase() === from.email
            ? undefined
            : { name: from.name, email: from.email },
        // An authenticated agent's reply goes on to the requester as any agent's reply (never automatic mail).
        send: agent !== undefined && !automatic,
      },
    );
    await r.refs.afterCommit(posted.ticket, refParty(target, posted.ticket));
    if (automatic) return r.automaticOutcome(posted.ticket.uuid, posted.message.id);
    const followUp = posted.ticket.uuid !== ticket.uuid;
    return {
      outcome: followUp ? 'follow_up' : 'threaded',
      reason: target.rule,
      ticketUuid: posted.ticket.uuid,
      messageId: posted.message.id,
    };
  } catch (error) {
    // A closed ticket and someone who is no party of it: no follow-up in the requester's name, but the mail
    // opens a ticket of the sender's own, as mail that matches no ticket does.
    if (!(error instanceof AutomaticNotThreaded) || automatic) throw error;
    return undefined;
  }
}
