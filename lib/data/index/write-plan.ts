import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type EventPlaces, settleEventPlaces, takeEventPlaces } from '../events.ts';
import { batchDeleteAll, batchPutAll, dynamo, tableName } from '../store/client.ts';
import { ConcurrentWrite, isConditionFailure, isTransactionConflict } from '../store/errors.ts';
import { ATTR } from '../store/items.ts';
import { commit } from '../store/transact.ts';
import { cutPlan, putUnconfirmed, type WritePlan } from './additions.ts';
import { rememberDirectoryEntries } from './directory.ts';

/** Writing a planned commit (commit.ts plans it): the marked additions first, the events' places, the commit. */

/**
 * Writes a plan: its marked additions, then its commit. A conflict, on the commit or on a marked block key
 * (block items other commits hold too), is a ConcurrentWrite; a failed condition throws what its action names.
 */
export async function writePlan(plan: WritePlan): Promise<void> {
  // A write that takes its event places now (an update) puts the plain directory entries beside that call.
  const cut = cutPlan(plan, { early: plan.events !== undefined && plan.events.reserved.length === 0 });
  let places: EventPlaces | undefined;
  try {
    await putUnconfirmed(cut.unconfirmed);
    await markRemoved(plan.removedAround ?? []);
    // The events' places are taken last, just before the commit: a change read before them is ordered after
    // every event of its object that committed (docs/data-model.md, "Events").
    // Beside them, the directory entries that need no atomicity (additions.ts, cutPlan): places taken are
    // closed below if these fail.
    const [taken, early] = await Promise.allSettled([
      plan.events && takeEventPlaces(plan.events.accountId, plan.events.drafts, plan.events.reserved),
      cut.early.length > 0 ? batchPutAll(cut.early) : undefined,
    ]);
    if (taken.status === 'rejected') throw taken.reason;
    places = taken.value;
    if (early.status === 'rejected') throw early.reason;
    await commit([...cut.commit, ...(places?.actions ?? [])]);
    rememberDirectoryEntries(cut.directory);
  } catch (error) {
    // The commit did not land, or may not have: its places are closed (a landed event keeps its place).
    if (places) await settleEventPlaces(places.accountId, places.seqs);
    if (isTransactionConflict(error)) throw new ConcurrentWrite({ cause: error });
    throw error;
  }
  // The entity no longer holds them: readers already skip them; the purge deletes again what a crash left here.
  if (plan.removedAround?.length) {
    await batchDeleteAll(plan.removedAround.map((item) => ({ pk: item.pk, sk: item.sk })));
  }
}

/** Marks index items unconfirmed (an item already gone is left so: the condition keeps it from being created). */
async function markRemoved(items: Record<string, unknown>[]): Promise<void> {
  await Promise.all(
    items.map((item) =>
      dynamo
        .send(
          new UpdateCommand({
            TableName: tableName(),
            Key: { pk: item.pk, sk: item.sk },
            UpdateExpression: 'SET #u = :one',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#u': ATTR.unconfirmed },
            ExpressionAttributeValues: { ':one': 1 },
          }),
        )
        .catch((error: unknown) => {
          if (!isConditionFailure(error)) throw error;
        }),
    ),
  );
}
