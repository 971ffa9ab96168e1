import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { intEnv } from '#lib/config/env.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { nowMillis } from '#lib/time.ts';
import { eventKeys } from '../keys/events.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, isTransactionConflict } from '../store/errors.ts';
import { eventId } from './ids.ts';
import { EVENT_RETENTION_SECONDS } from './item.ts';

/** Closing the places of commits that did not land, by their writers or by readers (the feed's design: ../events.ts). */

/**
 * How old an open place must be before a reader closes it: a writer takes its place at most a function's
 * lifetime before its commit, so a place older than that belongs to a writer that is gone. EVENT_SETTLE_MS
 * replaces it (tests of faults that leave places open; read at each use). Exactness does not depend on it:
 * a commit that lands after its place was closed fails whole.
 */
export const eventSettleMs = () => intEnv('EVENT_SETTLE_MS', FUNCTION_TIMEOUT_MS);

/** At most this many open places are closed by one page read (each a conditional put, sent together). */
export const MAX_CLOSED_PER_READ = 25;

/**
 * Closes places whose commit did not land (or may not have): a void item where none is. A place whose event
 * landed stays as it is. Best effort: a place left open is closed by a reader after EVENT_SETTLE_MS.
 */
export async function settleEventPlaces(accountId: string, seqs: number[]): Promise<boolean> {
  const closed = await Promise.all(seqs.map((seq) => closePlace(accountId, seq).catch(() => false)));
  return closed.every(Boolean);
}

/**
 * Answers true when the place is now void by this call, false when something (an event) is there, or a commit
 * touching it was in flight (a TransactionConflict: the reader tries again on its next page). `at`: the time no
 * place below it was taken after (now, for a writer closing its own; a reader closing places below an item gives
 * that item's, so the voids it writes do not look younger than the places they close).
 *
 * The void is put at the place's key on the condition that it is free, as the writer puts its event: exactly one
 * of the void and the event lands.
 */
export async function closePlace(accountId: string, seq: number, at = nowMillis()): Promise<boolean> {
  const put = {
    TableName: tableName(),
    Item: {
      ...eventKeys.place(accountId, seq),
      type: eventKeys.itemType.void,
      // A cursor past a run of voids names the last of them (readFeed): an id as an event's, no event's.
      id: eventId(seq),
      at,
      expires_at: Math.floor(nowMillis() / 1000) + EVENT_RETENTION_SECONDS,
    },
    ConditionExpression: 'attribute_not_exists(pk)',
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await dynamo.send(new PutCommand(put));
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      // A commit (or another close) of this place in flight: its outcome decides; asked again a few times.
      if (isTransactionConflict(error)) {
        if (attempt < CLOSE_ATTEMPTS) continue;
        return false;
      }
      throw error;
    }
  }
}

/** Attempts of a close cancelled by a transaction in flight on the place (closePlace). */
const CLOSE_ATTEMPTS = 3;
