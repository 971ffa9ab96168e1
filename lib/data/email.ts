import { createHash, randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { emailKeys, objectRefKeys, personRefKeys } from './keys.ts';
import { dynamo, getItem, tableName } from './store/client.ts';
import { isConditionFailure, retryOnConflict } from './store/errors.ts';
import { chunks, entityOf } from './store/items.ts';
import type { CommitAction, TransactUpdate } from './store/transact.ts';

/**
 * The e-mail channel in the store (docs/data-model.md, "E-mail"). Nothing here knows SMTP, S3 or MIME: the
 * domain (lib/email/) decides, this writes and reads three kinds of item.
 */

/** The same Message-ID already became a message of the account: the mail is a duplicate, nothing written. */
export class DuplicateMail extends Error {
  constructor(readonly held: MailIdRecord | undefined) {
    super('This Message-ID was already received by the account');
  }
}

/** An address held by another account (apply refuses it). */
export class AddressTaken extends Error {
  constructor(readonly address: string) {
    super(`${address} belongs to another account`);
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

/** The account an address belongs to (one GetItem), or undefined. */
export async function findAccountIdByAddress(address: string): Promise<string | undefined> {
  return (await getItem(emailKeys.address(address), { eventual: true }))?.accountId as string | undefined;
}

/**
 * Claims the addresses for the account, one conditional Put each (free, or already the account's): an address
 * of another account is an AddressTaken, and the addresses claimed before it stay the account's (re-applying
 * a fixed file claims the rest; none is ever taken from another).
 */
export async function claimAddresses(accountId: string, addresses: string[]): Promise<void> {
  for (const address of addresses) {
    try {
      await dynamo.send(
        new PutCommand({
          TableName: tableName(),
          Item: { ...emailKeys.address(address), type: 'email_address', accountId, address },
          ConditionExpression: 'attribute_not_exists(pk) OR accountId = :id',
          ExpressionAttributeValues: { ':id': accountId },
        }),
      );
    } catch (error) {
      if (isConditionFailure(error)) throw new AddressTaken(address);
      throw error;
    }
  }
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
 * The write of a person reference to a ticket (docs/data-model.md, "Erasures"): keys and `w`, a token new with
 * each write, in the commit of the message of a mail that names the person (`hash`: their address's keyed hash).
 * Unconditional: the same reference written again (another mail of the thread) keeps the item with a new token,
 * so an erasure that read the old one deletes it only if no mail wrote it since (deletePersonRef). `party`: the
 * person is one of the ticket's parties (decisions.md, "The e-mail channel": named on the mail of its requester or
 * of a party, so a Cc of the ticket's mail), whose own mail may change the ticket's status; an update (never a
 * Put), so another mail naming them later never takes that away.
 */
export function personRefPut(
  accountId: string,
  hash: string,
  ticketUuid: string,
  party = false,
): CommitAction {
  const { pk, sk, gsi2pk, gsi2sk } = personRefKeys.ticket(accountId, hash, ticketUuid);
  return {
    what: 'person_ref',
    action: {
      Update: {
        TableName: tableName(),
        Key: { pk, sk },
        UpdateExpression: `SET #type = :type, gsi2pk = :gpk, gsi2sk = :gsk, w = :w${party ? ', party = :party' : ''}`,
        ExpressionAttributeNames: { '#type': 'type' },
        ExpressionAttributeValues: {
          ':type': 'person_ref',
          ':gpk': gsi2pk,
          ':gsk': gsi2sk,
          ':w': randomBytes(6).toString('hex'),
          ...(party ? { ':party': true } : {}),
        },
      },
    },
  };
}

/** How many person references putPersonRefs writes at once. */
const REF_WRITES_AT_ONCE = 10;

/**
 * Writes person references to a ticket outside a commit: those of a mail past the MAX_PERSON_REFS its commit
 * holds (lib/erasures/address-hash.ts), right after it. Each is the UpdateItem personRefPut's action makes, never
 * a Put (which BatchWriteItem would be): a `party` mark an earlier mail gave stays. Writing one again is harmless
 * (the same keys, a new `w`), so a mail processed again writes them all again. REF_WRITES_AT_ONCE at a time, each
 * group settled before the next; the first failure is thrown once its group has settled (the caller's mail is
 * tried again).
 */
export async function putPersonRefs(
  accountId: string,
  hashes: string[],
  ticketUuid: string,
  party: boolean,
): Promise<void> {
  for (const group of chunks(hashes, REF_WRITES_AT_ONCE)) {
    const written = await Promise.allSettled(
      group.map((hash) => {
        const update = personRefPut(accountId, hash, ticketUuid, party).action.Update as TransactUpdate;
        return retryOnConflict(() => dynamo.send(new UpdateCommand(update)));
      }),
    );
    const failed = written.find((w) => w.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** Whether the person (`hash`: their address's keyed hash) is one of the ticket's parties (one GetItem). */
export async function isTicketParty(accountId: string, hash: string, ticketUuid: string): Promise<boolean> {
  const { pk, sk } = personRefKeys.ticket(accountId, hash, ticketUuid);
  return (await getItem({ pk, sk }))?.party === true;
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
