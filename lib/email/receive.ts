import type { Readable } from 'node:stream';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { findAccountIdByAddress } from '#lib/data/mail/addresses.ts';
import { getInbound, type InboundRecord, putInbound } from '#lib/data/mail/inbound.ts';
import {
  DuplicateMail,
  findMailId,
  type MailIdRecord,
  mailIdPut,
  receivedMailId,
} from '#lib/data/mail/message-ids.ts';
import { attachmentKey, type MailObjectStore, rawCopyKey } from '#lib/data/mail-store.ts';
import { liftSuppression } from '#lib/data/outbox.ts';
import { StoreRefused } from '#lib/data/store/errors.ts';
import { addressHash, personRefAddresses } from '#lib/erasures/address-hash.ts';
import { AppError } from '#lib/errors.ts';
import { logMail } from '#lib/log.ts';
import { createTicketFrom } from '#lib/tickets/create-ticket.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { descriptionMessage, type MailFields, type Message } from '#lib/tickets/messages/message.ts';
import { AutomaticNotThreaded, postParsedMessage } from '#lib/tickets/messages/post.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { splitAddress } from './addresses.ts';
import type { MailAuthentication } from './authentication.ts';
import { type AutomaticReason, classifyAutomatic, isBounce } from './classify.ts';
import { keepCopies } from './copies.ts';
import { mailRefs } from './mail-refs.ts';
import { acknowledge, bounced } from './outbox.ts';
import { type ParsedMail, parseMail } from './parse.ts';
import { type MailToken, tokensOfRecipients } from './tokens.ts';
import { agentOf, authenticationOf, isParty } from './trust.ts';

export { splitAddress } from './addresses.ts';
export { INBOUND_ID_PATTERN, INBOUND_OUTCOMES, type InboundOutcome, newInboundId } from './outcomes.ts';

/**
 * The one inbound handler (docs/email.md): raw mail bytes in, an outcome per account out. It knows nothing of
 * SMTP or S3: `npm start`'s SMTP server (infra/local/mail.ts) and the deployed inbound function
 * (functions/email-inbound.ts) each keep the raw mail first, then call receiveMail with where it is.
 */

/** Where raw mail and attachments are kept: a folder locally, S3 deployed (lib/data/mail-store.ts). */
export type MailStore = Pick<MailObjectStore, 'openRaw' | 'putAttachment' | 'size' | 'copy' | 'remove'>;

/** The contract's size limit of a mail (decisions.md): 25 MiB. */
export const MAX_MAIL_BYTES = 26_214_400;

/** A mail as it was received: kept before anything else (the SMTP 250, or SES's S3 object). */
export interface ReceivedMail {
  /** Time-ordered id (newInboundId): the inbound log's key, the same when the mail is processed again. */
  inboundId: string;
  rawKey: string;
  receivedAt: string;
  /** The envelope sender: '' for the null sender (`MAIL FROM:<>`); undefined when unknown. */
  mailFrom: string | undefined;
  /** The envelope recipients (RCPT TO), as given. */
  recipients: string[];
  /** SPF, DKIM and DMARC as the receiving edge judged them: deployed, SES's verdicts (ses-receipt.ts). */
  authentication?: MailAuthentication | undefined;
  /**
   * Locally, the authserv-id whose `Authentication-Results` header is believed (infra/local/mail.ts,
   * `SMTP_AUTHSERV_ID`); without it or `authentication`, every result is `none`.
   */
  authservId?: string | undefined;
  /** SES's scan of the mail (deployed: the receipt's spamVerdict and virusVerdict statuses); absent locally. */
  verdicts?: { spam?: string | undefined; virus?: string | undefined } | undefined;
}

export type ThreadingRule =
  | 'token_address'
  | 'in_reply_to'
  | 'references'
  | 'subject_reference'
  | 'new_ticket';

/** The accounts a mail's envelope recipients belong to (each address's owner, one GetItem per distinct base). */
export async function accountsOf(recipients: string[]): Promise<Map<string, string[]>> {
  const byAccount = new Map<string, string[]>();
  const bases = [...new Set(recipients.map((r) => splitAddress(r).base))];
  const owners = await Promise.all(bases.map((b) => findAccountIdByAddress(b)));
  for (const recipient of recipients) {
    const owner = owners[bases.indexOf(splitAddress(recipient).base)];
    if (!owner) continue;
    byAccount.set(owner, [...(byAccount.get(owner) ?? []), recipient.trim().toLowerCase()]);
  }
  return byAccount;
}

/**
 * Processes a kept mail: each account it was sent to gets its own copy (lib/email/copies.ts), then each copy is
 * parsed (its attachments kept beside it, the account's own), and its outcome decided, written and logged.
 * Processing the same kept mail again (a crash after the 250, an S3 event delivered twice) changes nothing: an
 * account's log entry, keyed by the mail's inbound id, is its first outcome, and the Message-ID claim makes it one
 * message. Never throws for bad mail: a mail that cannot be parsed is logged `rejected`, and so is one over
 * `limits.maxBytes` (deployed, where SES takes larger mail: refused before it is parsed). Throws only when a store
 * fails (the caller retries the kept mail later).
 */
export async function receiveMail(
  mail: ReceivedMail,
  store: MailStore,
  limits: { maxBytes?: number } = {},
): Promise<InboundRecord[]> {
  const accounts = await accountsOf(mail.recipients);
  if (accounts.size === 0) {
    logMail('mail for no account', { inboundId: mail.inboundId, recipients: mail.recipients.length });
    return [];
  }
  // Processed already (a crash after its log entry, an event delivered twice): its first outcome stands.
  const ids = [...accounts.keys()];
  const found = await Promise.all(ids.map((accountId) => getInbound(accountId, mail.inboundId)));
  const logged = new Map(ids.map((accountId, i) => [accountId, found[i]]));
  const waiting = new Map([...accounts].filter(([accountId]) => !logged.get(accountId)));
  if (waiting.size > 0 && limits.maxBytes !== undefined) {
    for (const record of await refuseLarge(mail, [...waiting.keys()], store, limits.maxBytes)) {
      logged.set(record.accountId, record.entry);
      waiting.delete(record.accountId);
    }
  }
  const copies = waiting.size > 0 ? await keepCopies(mail, waiting, store) : new Map();
  const records: InboundRecord[] = [];
  for (const accountId of accounts.keys()) {
    const copy = copies.get(accountId);
    records.push(copy ? await receiveCopy(accountId, copy, store) : (logged.get(accountId) as InboundRecord));
  }
  return records;
}

/** One account's copy of a received mail: parsed, decided, written, logged. */
async function receiveCopy(accountId: string, mail: ReceivedMail, store: MailStore): Promise<InboundRecord> {
  let parsed: ParsedMail | undefined;
  let parseError: string | undefined;
  // A failure of where mail is kept (not of the mail): thrown, so the caller tries the kept mail again later.
  let storeFailure: unknown;
  // A mail SES found a virus in keeps no attachment: each is counted and listed, never kept (docs/email.md).
  const withheld = mail.verdicts?.virus === 'FAIL';
  try {
    const raw = store.openRaw(mail.rawKey);
    raw.on('error', (error) => {
      storeFailure ??= error;
    });
    parsed = await parseMail(raw, (id, content) =>
      withheld
        ? countBytes(content)
        : store
            .putAttachment(attachmentKey(accountId, mail.inboundId, id), content)
            .catch((error: unknown) => {
              storeFailure ??= error;
              throw error;
            }),
    );
  } catch (error) {
    if (storeFailure) throw storeFailure;
    parseError = error instanceof Error ? error.message.slice(0, 200) : 'unreadable';
  }
  const base: InboundRecord = {
    ...rejectedRecord(mail),
    headerMessageId: parsed?.messageId?.slice(0, 998) ?? null,
    from: parsed?.from?.email ?? null,
    subject: parsed ? parsed.subject || null : null,
  };
  const decided: InboundRecord = parsed
    ? { ...base, ...(await deliver(accountId, mail.recipients, parsed, mail)) }
    : { ...base, reason: `unparseable: ${parseError}` };
  await putInbound(accountId, decided, await senderRef(accountId, decided));
  logMail('mail received', { accountId, inboundId: mail.inboundId, outcome: decided.outcome });
  return decided;
}

/** A log entry of the mail, `rejected`, naming nothing of it yet. */
const rejectedRecord = (mail: ReceivedMail): InboundRecord => ({
  id: mail.inboundId,
  receivedAt: mail.receivedAt,
  headerMessageId: null,
  from: null,
  subject: null,
  outcome: 'rejected',
  reason: null,
  ticketUuid: null,
  messageId: null,
  rawKey: mail.rawKey,
});

/**
 * A kept mail over `maxBytes` (deployed: SES takes mail up to 40 MB), refused before it is read: logged `rejected`
 * for each account with its size (nothing of it is known: no sender, no subject), and removed, no copy made.
 * Answers each account's entry; none when the mail is within the limit (or no longer kept: its copies are).
 */
async function refuseLarge(
  mail: ReceivedMail,
  accountIds: string[],
  store: MailStore,
  maxBytes: number,
): Promise<{ accountId: string; entry: InboundRecord }[]> {
  const size = await store.size(mail.rawKey);
  if (size === undefined || size <= maxBytes) return [];
  const refused = [];
  for (const accountId of accountIds) {
    const reason = `too_large: ${size} bytes, over the limit of ${maxBytes}`;
    const entry = { ...rejectedRecord(mail), reason, rawKey: rawCopyKey(accountId, mail.inboundId) };
    await putInbound(accountId, entry, undefined);
    logMail('mail received', { accountId, inboundId: mail.inboundId, outcome: entry.outcome });
    refused.push({ accountId, entry });
  }
  await store.remove(mail.rawKey);
  return refused;
}

/** An attachment's bytes read and dropped; answers how many. */
async function countBytes(content: Readable): Promise<number> {
  let size = 0;
  for await (const chunk of content) size += (chunk as Buffer).length;
  return size;
}

/**
 * The person reference of a log entry (decisions.md, "Erasing a person"): a mail that became no ticket (refused,
 * automatic, suppressed…) is found by its sender's erasure through the entry itself; none for the account's own
 * addresses.
 */
async function senderRef(accountId: string, entry: InboundRecord): Promise<string | undefined> {
  if (entry.ticketUuid || !entry.from) return undefined;
  const own = (await getAccountConfig(accountId))?.account.email?.addresses ?? [];
  const [sender] = personRefAddresses([entry.from], own);
  return sender && addressHash(accountId, sender);
}

type Decision = Pick<InboundRecord, 'outcome' | 'reason' | 'ticketUuid' | 'messageId'>;

async function deliver(
  accountId: string,
  recipients: string[],
  parsed: ParsedMail,
  mail: ReceivedMail,
): Promise<Decision> {
  const config = await getAccountConfig(accountId);
  if (!config) return { outcome: 'rejected', reason: 'account_gone', ticketUuid: null, messageId: null };
  const from = parsed.from;
  const own = new Set(config.account.email?.addresses ?? []);
  let automatic: AutomaticReason | null = classifyAutomatic({
    header: parsed.header,
    contentType: parsed.contentType,
    from: from?.email,
    mailFrom: mail.mailFrom,
  });
  if (!automatic && from && own.has(splitAddress(from.email).base)) automatic = 'own_address';
  // The recipients' tokens whose tags are the service's (lib/email/tokens.ts): rule 1, and delivery reports.
  const tokens = tokensOfRecipients(accountId, own, recipients);
  // A delivery report marks a mail the service sent only when it came back to that mail's tagged envelope sender;
  // one to any other address (a guessed one) changes nothing and is logged `unverified`.
  const bounce = automatic !== null && isBounce(automatic);
  const report = bounce ? tokens.find((t) => t.mail !== undefined) : undefined;
  const marked = report ? await bounced(accountId, report) : undefined;
  const automaticOutcome = (ticketUuid: string | null = null, messageId: string | null = null): Decision => ({
    outcome: bounce ? 'bounce' : 'automatic',
    reason: bounce && !report ? 'unverified' : automatic,
    ticketUuid,
    messageId,
  });
  if (marked) return automaticOutcome(marked.ticketUuid, marked.messageId);
  // Mail of our own addresses (a loop of the service's own) and automatic mail with no sender thread nowhere.
  if (automatic && (automatic === 'own_address' || !from)) return automaticOutcome();
  // No sender, or a From that is not an address or is over 254 characters (never cut into another address).
  if (!from) {
    return {
      outcome: 'rejected',
      reason: parsed.fromProblem ?? 'no_sender',
      ticketUuid: null,
      messageId: null,
    };
  }
  // An agent's address that does not authenticate writes nothing anywhere (decisions.md): only logged.
  const authentication = authenticationOf(mail, parsed);
  const { agent, suspended } = agentOf(config, from.email, authentication);
  if (suspended) return { outcome: 'suspended', reason: suspended, ticketUuid: null, messageId: null };

  // The Message-ID claimed for the account: the header's, or the kept mail's own id when it has none. Beside
  // it, an address that bounced and now writes in again may receive mail again (an automatic answer is not
  // writing in).
  const claimId = receivedMailId(parsed.messageId, mail.inboundId);
  const [held] = await Promise.all([
    findMailId(accountId, claimId),
    automatic ? undefined : liftSuppression(accountId, from.email),
  ]);
  const refs = mailRefs(accountId, [from.email, ...parsed.to, ...parsed.cc], [...own]);
  if (held) {
    // Processed again after a crash that came after its commit: what follows the commit is done again (each
    // harmless twice): the person references past the commit's, and a new ticket's acknowledgement (at most once).
    const opens = held.messageNumber === 1;
    if (held.inboundId === mail.inboundId && (refs.spills || (opens && !automatic))) {
      const t = (await findTicket(accountId, held.ticketUuid))?.entity;
      if (t) {
        // A new ticket (or a follow-up) makes the people its mail names parties; a reply, as its sender may.
        await refs.afterCommit(t, opens || agent !== undefined || (await isParty(accountId, t, from.email)));
        if (opens && !automatic) await acknowledge(accountId, config, t, from.email);
      }
    }
    return automatic ? automaticOutcome(held.ticketUuid, held.messageId) : duplicateOf(held, mail.inboundId);
  }

  const { ticket, rule } = await thread(accountId, tokens, parsed, from.email);
  // Who may move the ticket: its requester, a party (a Cc of its mail) or an agent; their mail makes the people
  // it names parties too. Anyone else's mail threads without changing it.
  const party = agent !== undefined || !ticket || (await isParty(accountId, ticket, from.email));
  // The new text, at most MAX_MESSAGE_BODY characters (the parser cut the text before looking for quotes).
  const body = parsed.visibleText || '(no text)';
  const mailFields = (matchedBy: ThreadingRule): MailFields => ({
    email: {
      message_id: parsed.messageId ?? null,
      from: { email: from.email, name: from.name },
      to: parsed.to,
      cc: parsed.cc,
      // The header's count of addresses, where more were named than kept (at most MAX_KEPT_ADDRESSES each).
      ...(parsed.toCount > parsed.to.length ? { to_count: parsed.toCount } : {}),
      ...(parsed.ccCount > parsed.cc.length ? { cc_count: parsed.ccCount } : {}),
      subject: parsed.subject,
      in_reply_to: parsed.inReplyTo ?? null,
      threading: { matched_by: matchedBy },
      automatic,
      authentication,
      quoted_text_removed: parsed.quotedTextRemoved,
      ...(mail.verdicts?.spam === 'FAIL' ? { spam: true } : {}),
      ...(mail.verdicts?.virus === 'FAIL' ? { virus: true } : {}),
      ...(parsed.textCut ? { body_truncated: true } : {}),
      ...(parsed.attachmentsOmitted > 0 ? { attachments_omitted: parsed.attachmentsOmitted } : {}),
    },
    attachments: parsed.attachments.map((a) => ({ ...a })),
    source: { inboundId: mail.inboundId, rawKey: mail.rawKey },
  });
  // On a ticket the mail opens (new, or a follow-up) its sender is the requester or a party.
  const refParty = (t: Ticket) => party || t.uuid !== ticket?.uuid;
  // In the message's commit: the Message-ID's claim, and the mail's first person references (the rest after it).
  const claim = (message: Message, t: Ticket) => [
    mailIdPut(accountId, claimId, {
      ticketUuid: t.uuid,
      messageNumber: message.number,
      messageId: message.id,
      inboundId: mail.inboundId,
    }),
    ...refs.inCommit(t, refParty(t)),
  ];

  // Automatic mail threads into a matched ticket without changing it, and never opens one (decisions.md).
  if (automatic && !ticket) return automaticOutcome();
  const openTicket = async (): Promise<Decision> => {
    const created = await createTicketFrom(
      accountId,
      {
        subject: parsed.subject || '(no subject)',
        description: body,
        requester_email: from.email,
        requester_name: from.name || undefined,
        priority: undefined,
        category_id: undefined,
        category_slug: undefined,
        channel: 'email',
        custom_fields: undefined,
      },
      {
        descriptionEmail: mailFields('new_ticket'),
        moreItems: (t) => claim(descriptionMessage(t), t),
        oversizedField: 'body',
      },
    );
    await refs.afterCommit(created, refParty(created));
    await acknowledge(accountId, config, created, from.email);
    const messageId = descriptionMessage(created).id;
    return { outcome: 'new_ticket', reason: 'new_ticket', ticketUuid: created.uuid, messageId };
  };
  try {
    if (ticket) {
      try {
        const posted = await postParsedMessage(
          accountId,
          ticket.uuid,
          {
            body,
            visibility: 'public',
            author: agent ? 'agent' : 'requester',
            agent_id: agent?.id,
            status: undefined,
          },
          {
            channel: 'email',
            mail: mailFields(rule),
            items: claim,
            automatic: automatic !== null || !party,
            // An end user writes in their own name; the requester as the ticket knows them.
            sender:
              agent || ticket.requester.email?.toLowerCase() === from.email
                ? undefined
                : { name: from.name, email: from.email },
            // An authenticated agent's reply goes on to the requester as any agent's reply (never automatic mail).
            send: agent !== undefined && !automatic,
          },
        );
        await refs.afterCommit(posted.ticket, refParty(posted.ticket));
        if (automatic) return automaticOutcome(posted.ticket.uuid, posted.message.id);
        const followUp = posted.ticket.uuid !== ticket.uuid;
        return {
          outcome: followUp ? 'follow_up' : 'threaded',
          reason: rule,
          ticketUuid: posted.ticket.uuid,
          messageId: posted.message.id,
        };
      } catch (error) {
        // A closed ticket and someone who is no party of it: no follow-up in the requester's name, but the mail
        // opens a ticket of the sender's own, as mail that matches no ticket does.
        if (!(error instanceof AutomaticNotThreaded) || automatic) throw error;
      }
    }
    return await openTicket();
  } catch (error) {
    // An automatic mail whose ticket closed meanwhile: logged, as any automatic mail that matches no ticket.
    if (error instanceof AutomaticNotThreaded) return automaticOutcome();
    // The same mail committed meanwhile (sent to two addresses, or delivered twice at once): one message.
    if (error instanceof DuplicateMail) {
      if (automatic) return automaticOutcome(error.held?.ticketUuid ?? null, error.held?.messageId ?? null);
      return error.held
        ? duplicateOf(error.held, mail.inboundId)
        : { outcome: 'duplicate', reason: 'message_id', ticketUuid: null, messageId: null };
    }
    // A mail the ticket rules refuse (an agent writing to a closed ticket, a ticket too large): logged.
    if (error instanceof AppError && error.statusCode < 500) {
      return { outcome: 'rejected', reason: error.message.slice(0, 300), ticketUuid: null, messageId: null };
    }
    // A mail the store refuses whatever is tried (an item over 400 KB the bounds did not foresee): logged, never
    // tried again. A store that fails (unreachable, throttling) throws: the mail is tried again later.
    if (error instanceof StoreRefused) {
      const reason = `unstorable: ${error.message}`.slice(0, 300);
      return { outcome: 'rejected', reason, ticketUuid: null, messageId: null };
    }
    throw error;
  }
}

/** A claim already held: by this very mail (processed again after a crash), its first outcome; else a duplicate. */
function duplicateOf(held: MailIdRecord, inboundId: string): Decision {
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

const SUBJECT_REFERENCE = /\[([A-Za-z]{2,10}-\d{1,15})\]/;

/**
 * The contract's four rules, in order, within the account only: a token address (a verified token: `tokens`),
 * In-Reply-To then References (a Message-ID of one of the account's messages), the subject's reference when the
 * sender is that ticket's requester, else a new ticket.
 */
async function thread(
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
