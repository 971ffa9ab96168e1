import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import { isTicketParty } from '#lib/data/mail/person-refs.ts';
import { addressHash } from '#lib/erasures/address-hash.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import {
  authenticatesFrom,
  authenticationResults,
  type MailAuthentication,
  UNAUTHENTICATED,
} from './authentication.ts';
import type { ParsedMail } from './parse.ts';

/**
 * Who a received mail writes as (decisions.md, "The e-mail channel", the paragraph on agents and end users). The
 * From header is whatever the sender typed, so it is believed only as far as it is checked:
 * - an active agent's address writes as that agent only when the mail authenticates for its From domain (DMARC
 *   pass); otherwise the mail is `suspended`: nothing written on a ticket, nothing sent;
 * - the ticket's requester and its parties (a Cc of its mail) write as themselves and move the ticket as a
 *   requester's message does (reopen, follow-up);
 * - anyone else writes as themselves (author type requester, their own name and address) and changes nothing but
 *   the conversation.
 */

/** The mail's SPF, DKIM and DMARC results: the receiving edge's verdicts, or the trusted header. */
export function authenticationOf(
  mail: { authentication?: MailAuthentication | undefined; authservId?: string | undefined },
  parsed: ParsedMail,
): MailAuthentication {
  if (mail.authentication) return mail.authentication;
  if (!mail.authservId) return { ...UNAUTHENTICATED };
  const from = parsed.from?.email ?? '';
  return authenticationResults(
    parsed.authenticationResults,
    mail.authservId,
    from.slice(from.lastIndexOf('@') + 1),
  );
}

/**
 * The agent a mail from `sender` writes as (an active agent's address, authenticated), `suspended` with its
 * reason (an agent's address that did not authenticate), or neither (an end user).
 */
export function agentOf(
  config: AccountConfig,
  sender: string,
  authentication: MailAuthentication,
): { agent?: Agent; suspended?: string } {
  const agent = config.agents.find((a) => a.active && a.email.toLowerCase() === sender);
  if (!agent) return {};
  if (authenticatesFrom(authentication)) return { agent };
  return { suspended: `agent_unauthenticated: dmarc=${authentication.dmarc}` };
}

/**
 * Whether `sender` may move the ticket by mail: its requester, or a party (a person reference marked so, written
 * when a mail of the requester or of a party named them: one GetItem, only for someone else than the requester).
 */
export async function isParty(accountId: string, ticket: Ticket, sender: string): Promise<boolean> {
  if (ticket.requester.email?.toLowerCase() === sender) return true;
  return isTicketParty(accountId, addressHash(accountId, sender), ticket.uuid);
}
