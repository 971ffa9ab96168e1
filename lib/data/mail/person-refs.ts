import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { personRefKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { retryOnConflict } from '../store/errors.ts';
import { chunks } from '../store/items.ts';
import type { CommitAction, TransactUpdate } from '../store/transact.ts';

/**
 * A received mail's person references to its ticket (docs/data-model.md, "Erasures"): one for each person it names,
 * so that erasing them finds the ticket, marked when the person is one of the ticket's parties.
 */

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
