import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import type { InboundRecord } from '#lib/data/mail/inbound.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { MailAuthentication } from '../authentication.ts';
import type { AutomaticReason } from '../classify.ts';
import type { MailRefs } from '../mail-refs.ts';
import type { ParsedMail } from '../parse.ts';
import type { ReceivedMail } from '../receive.ts';
import type { ThreadingRule } from './thread.ts';

/**
 * What the steps of one account's copy of a mail share (lib/email/receive/deliver.ts): the mail as far as it is
 * known once its sender is, and the outcome each step answers.
 */

/** An account's outcome of a mail: its inbound log entry but what the mail itself says. */
export type Decision = Pick<InboundRecord, 'outcome' | 'reason' | 'ticketUuid' | 'messageId'>;

/** An outcome that names no ticket and no message. */
export const noTicket = (outcome: string, reason: string | null): Decision => ({
  outcome,
  reason,
  ticketUuid: null,
  messageId: null,
});

/** A mail with a sender, as its account's steps know it (deliver.ts decides each field). */
export interface Receipt {
  accountId: string;
  config: AccountConfig;
  mail: ReceivedMail;
  parsed: ParsedMail;
  from: NonNullable<ParsedMail['from']>;
  automatic: AutomaticReason | null;
  authentication: MailAuthentication;
  /** The agent the mail writes as (an authenticated agent's address), or none: an end user. */
  agent: Agent | undefined;
  refs: MailRefs;
  /** The Message-ID the mail claims for the account (receivedMailId). */
  claimId: string;
  /** The outcome of automatic mail: `bounce` or `automatic`, on the ticket and message given if any. */
  automaticOutcome: (ticketUuid?: string | null, messageId?: string | null) => Decision;
}

/** Where the mail goes: the ticket it threads into (none: a new one), by which rule, and who sent it. */
export interface Target {
  ticket: Ticket | undefined;
  rule: ThreadingRule;
  /**
   * Who may move the ticket: its requester, a party (a Cc of its mail) or an agent; their mail makes the people it
   * names parties too. Anyone else's mail threads without changing it.
   */
  party: boolean;
}

/** On a ticket the mail opens (new, or a follow-up) its sender is the requester or a party. */
export const refParty = (target: Target, t: Ticket) => target.party || t.uuid !== target.ticket?.uuid;
