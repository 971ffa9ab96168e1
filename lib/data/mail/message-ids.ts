import { createHash } from 'node:crypto';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { emailKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { entityOf } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * The account's Message-ID items (docs/data-model.md, "Items"): what each Message-ID of its mail became, claimed
 * by a received mail in its message's commit (a duplicate is refused there) and recorded for a sent one, so that
 * replies thread by them.
 */

/** The same Message-ID already became a message of the account: the mail is a duplicate, nothing written. */
export class DuplicateMail extends Error {
  constructor(readonly held: MailIdRecord | undefined) {
    super('This Message-ID was already received by the account');
  }
}

/** What a Message-ID became: the ticket and the message (number 1 for a new ticket's description). */
export interface MailIdRecord {
  ticketUuid: string;
  messageNumber: number;
  messageId: string;
  /** The received mail that claimed it (its inbound id): processing that mail again is not a duplicate. */
  inboundId?: string;
}

const hashOf = (headerId: string) =>
  createHash('sha256').update(headerId.trim().toLowerCase()).digest('hex').slice(0, 40);

/**
 * The Message-ID a received mail claims: its own, or (a mail without one) one made of its inbound id, so that
 * processing the same mail again is still found as a duplicate.
 */
export const receivedMailId = (headerId: string | undefined, inboundId: string) =>
  headerId ?? `${inboundId}@inbound.deskpipe.invalid`;

/**
 * The keys of the Message-ID items a stored mail owns (a message's or an acknowledgement's): the id it claimed
 * when received, or, sent, its own and the provider's (an agent's reply by mail: both, its sent mail's own id in
 * `outgoing`). The purge deletes them with the mail.
 */
export function mailIdKeysOf(accountId: string, item: Record<string, unknown>): Record<string, string>[] {
  const email = item.email as
    | { message_id?: unknown; delivery?: { provider_message_id?: unknown } | null }
    | undefined;
  const inboundId = (item.source as { inboundId?: unknown } | undefined)?.inboundId;
  if (!email) return [];
  const ids = [
    typeof inboundId === 'string'
      ? receivedMailId(typeof email.message_id === 'string' ? email.message_id : undefined, inboundId)
      : email.message_id,
    email.delivery?.provider_message_id,
    (item.outgoing as { message_id?: unknown } | undefined)?.message_id,
  ].filter((id): id is string => typeof id === 'string' && id !== '');
  return [...new Set(ids.map(hashOf))].map((hash) => emailKeys.messageId(accountId, hash));
}

/** The message a Message-ID of the account became (one GetItem), or undefined. */
export async function findMailId(accountId: string, headerId: string): Promise<MailIdRecord | undefined> {
  const item = await getItem(emailKeys.messageId(accountId, hashOf(headerId)));
  return item && entityOf<MailIdRecord>(item);
}

/**
 * Deletes the item of a Message-ID (an erasure's, when the id holds the person's address: the item keeps the id
 * as written). A reply quoting that id no longer threads by it. Answers whether there was one.
 */
export async function deleteMailId(accountId: string, headerId: string): Promise<boolean> {
  const { Attributes } = await dynamo.send(
    new DeleteCommand({
      TableName: tableName(),
      Key: emailKeys.messageId(accountId, hashOf(headerId)),
      ReturnValues: 'ALL_OLD',
    }),
  );
  return Attributes !== undefined;
}

/** A Message-ID's item of the account: received (claimed) or sent (recorded), one shape. */
const mailIdItem = (accountId: string, headerId: string, record: MailIdRecord) => ({
  ...emailKeys.messageId(accountId, hashOf(headerId)),
  type: 'email_message_id',
  headerMessageId: headerId.slice(0, 1000),
  ...record,
});

/**
 * The Put that claims a Message-ID for the account, in the commit of the message it becomes: the same mail
 * arriving twice at once commits once, the other commit is refused as a DuplicateMail (nothing written).
 */
export function mailIdPut(accountId: string, headerId: string, record: MailIdRecord): CommitAction {
  return {
    what: 'email_message_id',
    action: {
      Put: {
        TableName: tableName(),
        Item: mailIdItem(accountId, headerId, record),
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => new DuplicateMail(held && entityOf<MailIdRecord>(held)),
  };
}

/**
 * The Put that records a Message-ID of a mail the service sent (its own, and the one the provider assigned), in
 * the commit that marks it sent: a reply quoting either threads into its ticket. Unconditional: the ids are the
 * service's own (or the provider's), and writing one again writes the same.
 */
export function sentMailIdPut(accountId: string, headerId: string, record: MailIdRecord): CommitAction {
  return {
    what: 'email_message_id',
    action: {
      Put: {
        TableName: tableName(),
        Item: mailIdItem(accountId, headerId, record),
      },
    },
  };
}
