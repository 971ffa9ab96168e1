import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { findMailId, receivedMailId } from '#lib/data/mail/message-ids.ts';
import { liftSuppression } from '#lib/data/outbox.ts';
import { mailRefs } from '../mail-refs.ts';
import type { ParsedMail } from '../parse.ts';
import type { ReceivedMail } from '../receive.ts';
import { tokensOfRecipients } from '../tokens.ts';
import { agentOf, authenticationOf, isParty } from '../trust.ts';
import { automaticOf, reportOf } from './automatic.ts';
import { processedAgain } from './claim.ts';
import { type Decision, noTicket, type Receipt, type Target } from './decision.ts';
import { postOnTicket } from './existing-ticket.ts';
import { openTicket } from './new-ticket.ts';
import { refusedOutcome } from './refusals.ts';
import { thread } from './thread.ts';

/**
 * One account's outcome of a parsed mail (docs/email.md): who sent it and what kind of mail it is, its claim, where
 * it threads, then the message it becomes on a ticket (or the ticket it opens), or why it becomes none.
 */
export async function deliver(
  accountId: string,
  recipients: string[],
  parsed: ParsedMail,
  mail: ReceivedMail,
): Promise<Decision> {
  const config = await getAccountConfig(accountId);
  if (!config) return noTicket('rejected', 'account_gone');
  const from = parsed.from;
  const own = new Set(config.account.email?.addresses ?? []);
  const automatic = automaticOf(parsed, mail.mailFrom, own);
  // The recipients' tokens whose tags are the service's (lib/email/tokens.ts): rule 1, and delivery reports.
  const tokens = tokensOfRecipients(accountId, own, recipients);
  const { marked, automaticOutcome } = await reportOf(accountId, automatic, tokens);
  if (marked) return automaticOutcome(marked.ticketUuid, marked.messageId);
  // Mail of our own addresses (a loop of the service's own) and automatic mail with no sender thread nowhere.
  if (automatic && (automatic === 'own_address' || !from)) return automaticOutcome();
  // No sender, or a From that is not an address or is over 254 characters (never cut into another address).
  if (!from) return noTicket('rejected', parsed.fromProblem ?? 'no_sender');
  // An agent's address that does not authenticate writes nothing anywhere (decisions.md): only logged.
  const authentication = authenticationOf(mail, parsed);
  const { agent, suspended } = agentOf(config, from.email, authentication);
  if (suspended) return noTicket('suspended', suspended);

  // The Message-ID claimed for the account: the header's, or the kept mail's own id when it has none. Beside
  // it, an address that bounced and now writes in again may receive mail again (an automatic answer is not
  // writing in).
  const claimId = receivedMailId(parsed.messageId, mail.inboundId);
  const [held] = await Promise.all([
    findMailId(accountId, claimId),
    automatic ? undefined : liftSuppression(accountId, from.email),
  ]);
  const refs = mailRefs(accountId, [from.email, ...parsed.to, ...parsed.cc], [...own]);
  const r: Receipt = {
    accountId,
    config,
    mail,
    parsed,
    from,
    automatic,
    authentication,
    agent,
    refs,
    claimId,
    automaticOutcome,
  };
  if (held) return processedAgain(r, held);

  const { ticket, rule } = await thread(accountId, tokens, parsed, from.email);
  // Automatic mail threads into a matched ticket without changing it, and never opens one (decisions.md).
  if (automatic && !ticket) return automaticOutcome();
  const party = agent !== undefined || !ticket || (await isParty(accountId, ticket, from.email));
  const target: Target = { ticket, rule, party };
  try {
    const posted = ticket ? await postOnTicket(r, target, ticket) : undefined;
    return posted ?? (await openTicket(r, target));
  } catch (error) {
    return refusedOutcome(r, error);
  }
}
