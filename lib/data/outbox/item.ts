import { messageKeys, outboxKeys } from '../keys.ts';
import { getItem } from '../store/client.ts';
import { entityOf, type ItemKey } from '../store/items.ts';

/** A mail in the outbox: its delivery, the attributes that are the outbox's, its keys, and reads of one item. */

export type DeliveryStatus = 'queued' | 'sent' | 'failed' | 'bounced';

/** A mail's delivery as the message shows it (`email.delivery`). */
export interface Delivery {
  status: DeliveryStatus;
  attempts: number;
  provider_message_id: string | null;
}

export const QUEUED: Delivery = { status: 'queued', attempts: 0, provider_message_id: null };

/** The item attributes that are the outbox's, not the message's: their one spelling. */
export const OUTBOX_ATTR = {
  kind: 'outboxKind',
  owner: 'outboxOwner',
  until: 'outboxUntil',
  error: 'outboxError',
} as const;
const O = OUTBOX_ATTR;

export type OutboxKind = 'reply' | 'ack';

/** The attributes that put an item in the outbox, due at `atMs` (a message's Put adds them in its commit). */
export function outboxAttributes(accountId: string, key: ItemKey, kind: OutboxKind, atMs: number) {
  return { ...outboxKeys.due(accountId, key, atMs), [O.kind]: kind };
}

/** The outbox item of a ticket's mail: its message `number`'s (a reply), or its acknowledgement. */
export const outboxItemKey = (accountId: string, ticketUuid: string, mail: number | 'ack'): ItemKey =>
  mail === 'ack' ? outboxKeys.ack(accountId, ticketUuid) : messageKeys.message(accountId, ticketUuid, mail);

/** A claimed mail: the item as stored (its entity), its kind and delivery. */
export interface ClaimedMail {
  kind: OutboxKind;
  item: Record<string, unknown>;
  delivery: Delivery;
}

export const deliveryOf = (item: Record<string, unknown>): Delivery =>
  ((item.email as Record<string, unknown> | undefined)?.delivery as Delivery | undefined) ?? QUEUED;

/** The mail of an item as stored: its kind (a reply unless marked), entity and delivery. */
export const mailOf = (item: Record<string, unknown>): ClaimedMail => ({
  kind: (item[O.kind] as OutboxKind) ?? 'reply',
  item: entityOf(item),
  delivery: deliveryOf(item),
});

/** An item of the outbox as stored (strongly consistent), or undefined. */
export async function getOutboxItem(key: ItemKey): Promise<ClaimedMail | undefined> {
  const item = await getItem({ ...key });
  if (!item) return undefined;
  return mailOf(item);
}

/** An operator's view of one mail: its delivery, due time, claim and last error. */
export async function outboxState(key: ItemKey) {
  const item = await getItem({ ...key });
  if (!item) return undefined;
  return {
    delivery: deliveryOf(item),
    due: item.gsi2sk === undefined ? null : outboxKeys.parseDue(String(item.gsi2sk)).dueMs,
    claimedBy: (item[O.owner] as string | undefined) ?? null,
    error: (item[O.error] as string | null | undefined) ?? null,
  };
}

/** Whether a stored item is (or was) a mail of the outbox: a reply's message item or an acknowledgement. */
export const isOutboxItem = (item: Record<string, unknown>) => item[O.kind] !== undefined;
