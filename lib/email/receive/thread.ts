import { findMailId } from '#lib/data/mail/message-ids.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { ParsedMail } from '../parse.ts';
import type { MailToken } from '../tokens.ts';

/** The threading decision of a received mail (docs/email.md): which of the account's tickets it belongs to. */

export type ThreadingRule =
  | 'token_address'
  | 'in_reply_to'
  | 'references'
  | 'subject_reference'
  | 'new_ticket';

const SUBJECT_REFERENCE = /\[([A-Za-z]{2,10}-\d{1,15})\]/;

/**
 * The contract's four rules, in order, within the account only: a token address (a verified token: `tokens`),
 * In-Reply-To then References (a Message-ID of one of the account's messages), the subject's reference when the
 * sender is that ticket's requester, else a new ticket.
 */
export async function thread(
  accountId: string,
  tokens: MailToken[],
  parsed: ParsedMail,
  sender: string,
): Promise<{ ticket: Ticket | undefined; rule: ThreadingRule }> {
  // A reply token, or the envelope sender's form of a sent mail (`<ref>.<n>`, `<ref>.ack`): both name the ticket.
  for (const token of tokens) {
    const found = await findTicket(accountId, token.reference);
    if (found) return { ticket: found.entity, rule: 'token_address' };
  }
  const byId = async (id: string | undefined) => {
    if (!id) return undefined;
    const held = await findMailId(accountId, id);
    return held ? (await findTicket(accountId, held.ticketUuid))?.entity : undefined;
  };
  const replied = await byId(parsed.inReplyTo);
  if (replied) return { ticket: replied, rule: 'in_reply_to' };
  // Newest reference first; a long chain is looked up to its last 10.
  for (const id of parsed.references.slice(-10).reverse()) {
    const referenced = await byId(id);
    if (referenced) return { ticket: referenced, rule: 'references' };
  }
  const reference = SUBJECT_REFERENCE.exec(parsed.subject)?.[1];
  if (reference) {
    const found = await findTicket(accountId, reference);
    if (found && found.entity.requester.email.toLowerCase() === sender) {
      return { ticket: found.entity, rule: 'subject_reference' };
    }
  }
  return { ticket: undefined, rule: 'new_ticket' };
}
