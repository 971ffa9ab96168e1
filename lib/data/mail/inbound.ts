import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { emailKeys, objectRefKeys, personRefKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { entityOf } from '../store/items.ts';

/**
 * The inbound log (docs/data-model.md, "Items"): an entry per received mail and account, keyed by the mail's
 * inbound id, with its outcome. Nothing in lib/data/mail/ knows SMTP, S3 or MIME: the domain (lib/email/) decides,
 * this writes and reads.
 */

/** One entry of the inbound log (decisions.md, "The e-mail channel"), as the domain keeps it. */
export interface InboundRecord {
  id: string;
  receivedAt: string;
  headerMessageId: string | null;
  from: string | null;
  subject: string | null;
  outcome: string;
  reason: string | null;
  ticketUuid: string | null;
  messageId: string | null;
  /** Where the raw mail is kept (a local file name or an S3 key). */
  rawKey: string;
}

/**
 * Writes (or writes again, the same) the log entry of a received mail: keyed by its id, so idempotent. An entry
 * of a mail that became no ticket is its sender's person reference (`senderHash`: the address's keyed hash).
 */
export async function putInbound(
  accountId: string,
  record: InboundRecord,
  senderHash?: string | undefined,
): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...emailKeys.inbound(accountId, record.id),
        // The ticket's reference (keys only): an erasure finds the mail that became its messages by it; with no
        // ticket, the sender's (the entry is found by the erasure of its sender's address).
        ...(record.ticketUuid
          ? objectRefKeys.ref(accountId, record.ticketUuid, 'inbound', record.id)
          : senderHash
            ? personRefKeys.inbound(accountId, senderHash, record.id)
            : {}),
        type: 'email_inbound',
        ...record,
      },
    }),
  );
}

/** One log entry (one GetItem), or undefined: a mail processed again finds its first outcome here. */
export async function getInbound(accountId: string, inboundId: string): Promise<InboundRecord | undefined> {
  const item = await getItem(emailKeys.inbound(accountId, inboundId));
  return item && entityOf<InboundRecord>(item);
}

/** Up to `limit` log entries older than `before` (an id), newest first: one range of the log's partition. */
export async function queryInbound(
  accountId: string,
  before: string | undefined,
  limit: number,
): Promise<InboundRecord[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: before === undefined ? 'pk = :pk' : 'pk = :pk AND sk < :before',
      ExpressionAttributeValues: {
        ':pk': emailKeys.inboundPartition(accountId),
        ...(before === undefined ? {} : { ':before': before }),
      },
      ScanIndexForward: false,
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((item) => entityOf<InboundRecord>(item));
}
