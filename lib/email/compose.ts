import MailComposer from 'nodemailer/lib/mail-composer';

/**
 * A mail the service sends, as raw RFC 5322 bytes (nodemailer's MailComposer: headers encoded, text/plain UTF-8
 * in quoted-printable, a Date). Built once per attempt from what the outbox stored, so every attempt of one
 * mail carries the same Message-ID: a duplicate is only ever a retry of the same mail.
 */
export interface OutgoingMail {
  /** The envelope sender (MAIL FROM): the account's address in its `+token` form, where delivery reports come. */
  envelopeFrom: string;
  from: { email: string; name: string | null };
  to: string[];
  replyTo: string;
  subject: string;
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  text: string;
  /** An automatic mail (an acknowledgement): `Auto-Submitted: auto-replied` (RFC 3834). */
  autoReplied: boolean;
}

export async function composeMail(mail: OutgoingMail): Promise<Buffer> {
  const composer = new MailComposer({
    from: { name: mail.from.name ?? '', address: mail.from.email },
    to: mail.to,
    replyTo: mail.replyTo,
    subject: mail.subject,
    messageId: mail.messageId,
    ...(mail.inReplyTo ? { inReplyTo: mail.inReplyTo } : {}),
    ...(mail.references.length > 0 ? { references: mail.references } : {}),
    text: mail.text,
    textEncoding: 'quoted-printable',
    headers: mail.autoReplied ? { 'Auto-Submitted': 'auto-replied', 'X-Auto-Response-Suppress': 'All' } : {},
  });
  return composer.compile().build();
}
