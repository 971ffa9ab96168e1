import {
  type ErasureProgress,
  objectRefs,
  type Ref,
  rewriteEvent,
  rewriteItem,
  withoutPersonRef,
} from '#lib/data/erasures.ts';
import type { StepOptions } from './job.ts';
import { allSettled, type Move, stepSize } from './move.ts';
import { ERASED, type Person, personPattern, redactText, redactValue } from './redact.ts';

/**
 * The copies of an object the job erases (found by the object's references, gsi2 `OBJECT_REFS#`, or by the
 * person's own, `PERSON_REFS#`): its events, kept answers and inbound log entries, each rewritten with the person
 * taken out.
 */

/** A page of the current object's references rewritten; true once there are no more. */
export async function refsStep(
  accountId: string,
  p: ErasureProgress,
  count: Move['count'],
  options: StepOptions,
): Promise<boolean> {
  const refs = await objectRefs(accountId, p.object ?? '', p.subAt, stepSize(options));
  await allSettled(refs.map((ref) => rewriteRef(accountId, ref, p, count, options)));
  if (refs.length < stepSize(options)) return true;
  p.subAt = refs.at(-1)?.ref ?? null;
  return false;
}

/** One item holding a copy of the object, rewritten with the person taken out. */
export async function rewriteRef(
  accountId: string,
  ref: Ref,
  p: ErasureProgress,
  count: Move['count'],
  options: StepOptions,
): Promise<void> {
  const person = p.person;
  const pattern = personPattern(person);
  const known = { descriptionByPerson: p.describedByPerson };
  const kind = ref.kind;
  if (kind === 'event') {
    const changed = await rewriteEvent(accountId, ref, (text) =>
      JSON.stringify(redactValue(JSON.parse(text), person, pattern, known)),
    );
    if (changed) count('events');
  } else if (kind === 'idempotency') {
    const changed = await rewriteItem(ref, (item) => {
      const body = JSON.stringify(redactValue(JSON.parse(String(item.body)), person, pattern, known));
      return body === item.body ? undefined : { ...item, body };
    });
    if (changed) count('idempotency');
  } else if (kind === 'inbound') {
    // A ticket's own refs (its entries found by their object reference): the person's own ticket but in the
    // mentions phase, where the ticket is someone else's.
    await rewriteInbound(accountId, ref, person, pattern, count, options, false, p.phase !== 'mentions');
  }
}

/**
 * An inbound log entry rewritten with the person taken out: a mail from them loses its sender and subject, its
 * raw mail and attachments erased first (so a retry after a failed erase still knows the mail was theirs);
 * `dropRef`: the entry was found by the person's reference, which goes in the same Put. `requested`: the entry is
 * of the person's own ticket, where automatic mail (a delivery report of a mail the service sent them, logged
 * `bounce` before any message is posted; an auto-reply) is about them: its raw mail and attachments quote their
 * address in their text, where no header names it, and are erased too (its entry keeps its sender, a relay's).
 */
export async function rewriteInbound(
  accountId: string,
  ref: Ref,
  person: Person,
  pattern: RegExp,
  count: Move['count'],
  options: StepOptions,
  dropRef: boolean,
  requested: boolean,
): Promise<void> {
  const changed = await rewriteItem(ref, async (item) => {
    const from = typeof item.from === 'string' ? item.from.toLowerCase() : '';
    const byPerson = from === person.email;
    const redacted = redactValue(item, person, pattern) as Record<string, unknown>;
    const aboutThem = requested && (item.outcome === 'bounce' || item.outcome === 'automatic');
    if ((byPerson || aboutThem) && options.mail) {
      count('mail', await options.mail.eraseMail(accountId, String(item.id), String(item.rawKey)));
    }
    if (byPerson) {
      redacted.from = null;
      redacted.subject = item.subject == null ? null : ERASED;
      redacted.headerMessageId =
        item.headerMessageId == null ? null : redactText(String(item.headerMessageId), pattern);
    }
    const next = dropRef ? withoutPersonRef(redacted) : redacted;
    return JSON.stringify(next) === JSON.stringify(item) ? undefined : next;
  });
  if (changed) count('email_inbound');
}
