import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs } from './sort.ts';

/**
 * The e-mail channel (docs/data-model.md, "Items"): who owns an address, which message a Message-ID became
 * (the dedupe and the threading lookup in one item), and the inbound log of every received mail.
 */
export const emailKeys = {
  /** An address (lower-cased) -> the one account it belongs to: its uniqueness and the recipient lookup. */
  address: (address: string) => ({ pk: `EMAIL_ADDRESS#${address.toLowerCase()}`, sk: 'EMAIL_ADDRESS' }),
  /** A Message-ID header of one account (by its SHA-256: any length fits) -> the ticket and message it is. */
  messageId: (accountId: string, idHash: string) => ({
    pk: `EMAIL_MESSAGE_ID#${accountId}#${idHash}`,
    sk: 'EMAIL_MESSAGE_ID',
  }),
  /** The account's inbound log: one item per received mail, sorted by its time-ordered id (newest last). */
  inboundPartition: (accountId: string) => `EMAIL_INBOUND#${accountId}`,
  inbound: (accountId: string, inboundId: string) => ({
    pk: `EMAIL_INBOUND#${accountId}`,
    sk: inboundId,
  }),
};

/**
 * The outbox (docs/email.md, "Sending"; docs/data-model.md, "Items"): mail the service sends. A reply's mail is
 * its message item itself; an acknowledgement has its own item. While a mail waits to be sent (queued, or a
 * retry's wait) its item is in the keys-only due index (gsi2), in one of DUE_SHARDS partitions by a hash of its
 * key, sorted by when it is due (epoch ms, 15 digits); sending it (or giving up) removes the entry.
 */
export const outboxKeys = {
  due: (accountId: string, key: { pk: string; sk: string }, atMs: number) => ({
    gsi2pk: `EMAIL_DUE#${dueShardOf(accountId, `${key.pk}#${key.sk}`)}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}`,
  }),
  duePartition: (shard: number) => `EMAIL_DUE#${shard}`,
  dueIndex: 'gsi2' as IndexName,
  dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  /** A due entry's sort key read back (the item's own keys come with the entry: the index projects them). */
  parseDue: (sk: string) => {
    const [due, accountId] = sk.split('#');
    return { dueMs: Number(due), accountId: accountId ?? '' };
  },
  /** A ticket's acknowledgement (at most one: its Put is conditional). */
  ack: (accountId: string, ticketUuid: string) => ({ pk: `EMAIL_ACK#${accountId}`, sk: ticketUuid }),
  /** Acknowledgements sent to one sender (by its SHA-256) in one hour (epoch hours): at most 10. */
  ackRate: (accountId: string, senderHash: string, hour: number) => ({
    pk: `EMAIL_ACK_RATE#${accountId}`,
    sk: `${senderHash}#${hour}`,
  }),
  /**
   * An address that bounced: it receives nothing more from the account until it writes in again. Keyed by the
   * address's keyed hash (lib/erasures/address-hash.ts), never the address: a bounce or complaint landing after the
   * address's erasure writes no address back.
   */
  suppressed: (accountId: string, addressHash: string) => ({
    pk: `EMAIL_SUPPRESSED#${accountId}`,
    sk: addressHash,
  }),
};
