import { randomUUID } from 'node:crypto';
import { messageKeys } from '#lib/data/keys.ts';
import { outboxAttributes } from '#lib/data/outbox.ts';
import { batchPutAll, getItem } from '#lib/data/store/client.ts';
import { chunks } from '#lib/data/store/items.ts';

/**
 * A bulk seeder for an outbox backlog (one account's mass mailing): `count` copies of a reply that is queued (its
 * message item as its commit wrote it: the template), each a message of the same ticket with its own number, id
 * and Message-ID, queued due at `dueMs(i)` (its due entry as a commit writes it, lib/data/outbox.ts
 * outboxAttributes), written with BatchWriteItem instead of a reply each. Not written: what the replies' commits
 * write beside their message (the ticket's conversation fields, events): the runner reads none of it to send.
 */
export async function seedQueuedMail(
  accountId: string,
  template: { ticketUuid: string; number: number },
  count: number,
  dueMs: (i: number) => number,
): Promise<{ pk: string; sk: string }[]> {
  const item = await getItem(messageKeys.message(accountId, template.ticketUuid, template.number));
  if (!item) throw new Error('seedQueuedMail: no such message');
  const email = item.email as Record<string, unknown>;
  const items = Array.from({ length: count }, (_, i) => {
    const number = template.number + 1 + i;
    const key = messageKeys.message(accountId, template.ticketUuid, number);
    const [local, domain] = String(email.message_id).split('@');
    return {
      ...item,
      ...key,
      number,
      id: randomUUID(),
      email: { ...email, message_id: `${local}.${number}@${domain}` },
      ...outboxAttributes(accountId, key, 'reply', dueMs(i)),
    };
  });
  await Promise.all(chunks(items, Math.ceil(items.length / 8) || 1).map((group) => batchPutAll(group)));
  return items.map(({ pk, sk }) => ({ pk, sk }));
}
