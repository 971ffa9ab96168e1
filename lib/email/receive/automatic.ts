import { splitAddress } from '../addresses.ts';
import { type AutomaticReason, classifyAutomatic, isBounce } from '../classify.ts';
import { bounced } from '../outbox.ts';
import type { ParsedMail } from '../parse.ts';
import type { MailToken } from '../tokens.ts';
import type { Decision } from './decision.ts';

/**
 * Automatic mail received (docs/email.md, decisions.md): what kind it is, and a delivery report's mark on the mail
 * the service sent.
 */

/** Why the mail is automatic (its headers, its sender), or `own_address` when one of the account's own sent it. */
export function automaticOf(
  parsed: ParsedMail,
  mailFrom: string | undefined,
  own: Set<string>,
): AutomaticReason | null {
  const from = parsed.from;
  const automatic = classifyAutomatic({
    header: parsed.header,
    contentType: parsed.contentType,
    from: from?.email,
    mailFrom,
  });
  if (!automatic && from && own.has(splitAddress(from.email).base)) return 'own_address';
  return automatic;
}

/**
 * A delivery report marks a mail the service sent only when it came back to that mail's tagged envelope sender
 * (one of `tokens`); one to any other address (a guessed one) changes nothing and is logged `unverified`. Answers
 * the mark (the sent mail's ticket and message) if any, and the outcome of the automatic mail.
 */
export async function reportOf(
  accountId: string,
  automatic: AutomaticReason | null,
  tokens: MailToken[],
): Promise<{
  marked: Awaited<ReturnType<typeof bounced>>;
  automaticOutcome: (ticketUuid?: string | null, messageId?: string | null) => Decision;
}> {
  const bounce = automatic !== null && isBounce(automatic);
  const report = bounce ? tokens.find((t) => t.mail !== undefined) : undefined;
  const marked = report ? await bounced(accountId, report) : undefined;
  const automaticOutcome = (ticketUuid: string | null = null, messageId: string | null = null): Decision => ({
    outcome: bounce ? 'bounce' : 'automatic',
    reason: bounce && !report ? 'unverified' : automatic,
    ticketUuid,
    messageId,
  });
  return { marked, automaticOutcome };
}
