import { DuplicateMail } from '#lib/data/mail/message-ids.ts';
import { StoreRefused } from '#lib/data/store/errors.ts';
import { AppError } from '#lib/errors.ts';
import { AutomaticNotThreaded } from '#lib/tickets/messages/post.ts';
import { duplicateOf } from './claim.ts';
import { type Decision, noTicket, type Receipt } from './decision.ts';

/**
 * The outcome of a mail whose commit was refused (docs/email.md): logged, never tried again. Throws anything else
 * (a store that fails: unreachable, throttling), so the mail is tried again later.
 */
export function refusedOutcome(r: Receipt, error: unknown): Decision {
  // An automatic mail whose ticket closed meanwhile: logged, as any automatic mail that matches no ticket.
  if (error instanceof AutomaticNotThreaded) return r.automaticOutcome();
  // The same mail committed meanwhile (sent to two addresses, or delivered twice at once): one message.
  if (error instanceof DuplicateMail) {
    if (r.automatic) return r.automaticOutcome(error.held?.ticketUuid ?? null, error.held?.messageId ?? null);
    return error.held ? duplicateOf(error.held, r.mail.inboundId) : noTicket('duplicate', 'message_id');
  }
  // A mail the ticket rules refuse (an agent writing to a closed ticket, a ticket too large): logged.
  if (error instanceof AppError && error.statusCode < 500)
    return noTicket('rejected', error.message.slice(0, 300));
  // A mail the store refuses whatever is tried (an item over 400 KB the bounds did not foresee): logged, never
  // tried again. A store that fails (unreachable, throttling) throws: the mail is tried again later.
  if (error instanceof StoreRefused)
    return noTicket('rejected', `unstorable: ${error.message}`.slice(0, 300));
  throw error;
}
