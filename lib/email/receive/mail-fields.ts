import type { MailFields } from '#lib/tickets/messages/message.ts';
import type { ParsedMail } from '../parse.ts';
import type { Receipt } from './decision.ts';
import type { ThreadingRule } from './thread.ts';

/** What a received mail's message keeps of it (docs/email.md): its text, and its mail's fields. */

/** The new text, at most MAX_MESSAGE_BODY characters (the parser cut the text before looking for quotes). */
export const bodyOf = (parsed: ParsedMail) => parsed.visibleText || '(no text)';

/** The message's `email`, attachments and source: the mail as received, and how it threaded. */
export function mailFields(r: Receipt, matchedBy: ThreadingRule): MailFields {
  const { parsed, from, mail } = r;
  return {
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
      automatic: r.automatic,
      authentication: r.authentication,
      quoted_text_removed: parsed.quotedTextRemoved,
      ...(mail.verdicts?.spam === 'FAIL' ? { spam: true } : {}),
      ...(mail.verdicts?.virus === 'FAIL' ? { virus: true } : {}),
      ...(parsed.textCut ? { body_truncated: true } : {}),
      ...(parsed.attachmentsOmitted > 0 ? { attachments_omitted: parsed.attachmentsOmitted } : {}),
    },
    attachments: parsed.attachments.map((a) => ({ ...a })),
    source: { inboundId: mail.inboundId, rawKey: mail.rawKey },
  };
}
