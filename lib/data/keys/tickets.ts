import { indexKeys } from './index/entity.ts';

/** Key builders of tickets and their conversations. */

/** Tickets: the index engine's keys of the `TICKET` entity, as every ticket item has always been keyed. */
export const ticketKeys = indexKeys('TICKET');

/**
 * A ticket's conversation (docs/data-model.md, "Messages"): an item per message in the ticket's own partition,
 * sorted by the message's number in its ticket (10 digits), so a page is one range of one partition whatever the
 * conversation's length. Number 1 is the description, derived from the ticket and never stored.
 */
export const messageKeys = {
  partition: (accountId: string, ticketUuid: string) => `TICKET_MESSAGES#${accountId}#${ticketUuid}`,
  sort: (number: number) => String(number).padStart(10, '0'),
  message: (accountId: string, ticketUuid: string, number: number) => ({
    pk: messageKeys.partition(accountId, ticketUuid),
    sk: messageKeys.sort(number),
  }),
};
