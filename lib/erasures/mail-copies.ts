import { putRewritten, readAgain } from '#lib/data/erasures.ts';
import { deleteMailId } from '#lib/data/mail/message-ids.ts';
import { isOutboxItem, withdrawnFromOutbox } from '#lib/data/outbox.ts';
import { ConcurrentWrite } from '#lib/data/store/errors.ts';
import type { StepOptions } from './job.ts';
import type { Move } from './move.ts';
import { type Person, redactValue } from './redact.ts';

/**
 * The mail of a person's ticket outside its item: what a message or a description mail leaves elsewhere (a
 * Message-ID's item, the raw mail), and a message or acknowledgement of the outbox rewritten (a mail queued to
 * them withdrawn, the kept copy of a mail sent to them erased).
 */

/** How many times a message's rewrite reads it again after a racing write before the step fails (and is retried). */
const REWRITE_TRIES = 5;

/**
 * What a received mail's message (or a ticket's description mail) leaves outside its item when it names the
 * person: the item of a Message-ID (its own, or the one it replied to) that holds them (the item keeps the id as
 * written: deleted, so a reply quoting it no longer threads by it), and the raw mail of a mail they were sent or
 * copied, or whose Message-ID or In-Reply-To holds them (its headers name them: the raw file replaced; its
 * attachments, the sender's, stay). The raw mail and
 * attachments of a mail from the person are erased through its inbound log entry (rewriteInbound).
 */
export async function eraseMailCopies(
  accountId: string,
  item: { email?: Record<string, unknown>; source?: { inboundId?: unknown; rawKey?: unknown } } | undefined,
  person: Person,
  pattern: RegExp,
  count: Move['count'],
  options: StepOptions,
  requested: boolean,
): Promise<void> {
  const email = item?.email;
  if (!email) return;
  const names = (text: unknown) => {
    pattern.lastIndex = 0;
    return typeof text === 'string' && pattern.test(text);
  };
  const ids = [...new Set([email.message_id, email.in_reply_to])].filter(names);
  for (const id of ids) {
    if (await deleteMailId(accountId, String(id))) count('email_inbound');
  }
  const from = (email.from as { email?: unknown } | undefined)?.email;
  const copied = [email.to, email.cc].some(
    (list) => Array.isArray(list) && list.some((a) => a === person.email),
  );
  // On the person's own ticket, automatic mail (a bounce of a mail to them, an auto-reply) is about them: its
  // raw copy quotes their address in its text, where no header names it.
  const aboutThem = requested && email.automatic != null;
  const rawKey = item?.source?.rawKey;
  if (
    (copied || ids.length > 0 || aboutThem) &&
    from !== person.email &&
    typeof rawKey === 'string' &&
    options.mail
  ) {
    count('mail', await options.mail.eraseRaw(rawKey));
  }
}

/**
 * A message or acknowledgement item of the person's ticket rewritten with the person taken out: a mail still
 * queued to them is taken out of the outbox, the outbox's error text (which may quote the address) redacted with
 * the rest; and the kept copy of a mail the service sent (the folder sender's `.eml`, by its Message-ID) erased.
 * Answers whether the item changed.
 */
export async function rewriteOutboxItem(
  item: Record<string, unknown>,
  person: Person,
  pattern: RegExp,
  count: Move['count'],
  options: StepOptions,
): Promise<boolean> {
  let changed = false;
  // Raced (another erasure rewrote it, or the outbox moved it, since it was read): read again and rewrite that.
  for (let read: Record<string, unknown> | undefined = item, tries = 0; read; tries++) {
    if (tries === REWRITE_TRIES) throw new ConcurrentWrite();
    const redacted = redactValue(read, person, pattern) as Record<string, unknown>;
    changed = JSON.stringify(redacted) !== JSON.stringify(read);
    if (!changed || (await putRewritten(withdrawnFromOutbox(redacted), read))) break;
    read = await readAgain(read);
  }
  const messageId = sentMessageId(item);
  if (messageId && options.mail) count('mail', await options.mail.eraseSent(messageId));
  return changed;
}

/** The Message-ID of a mail the service sent (or was to send) from this item, or undefined. */
export function sentMessageId(item: Record<string, unknown>): string | undefined {
  const id = (item.email as { message_id?: unknown } | undefined)?.message_id;
  return isOutboxItem(item) && typeof id === 'string' ? id : undefined;
}
