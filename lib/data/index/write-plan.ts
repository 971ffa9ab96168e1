import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type EventPlaces, settleEventPlaces, takeEventPlaces } from '../events.ts';
import { batchDeleteAll, dynamo, tableName } from '../store/client.ts';
import {
  ConcurrentWrite,
  isConditionFailure,
  isTransactionConflict,
  retryOnConflict,
} from '../store/errors.ts';
import { ATTR } from '../store/items.ts';
import { commit } from '../store/transact.ts';
import { cutPlan, putUnconfirmed, type WritePlan } from './additions.ts';
import { putPlainEntries, rememberDirectoryEntries } from './directory.ts';
import { abandonMarked, putMarked } from './pending.ts';

/** Writing a planned commit (commit.ts plans it): the marked additions first, the events' places, the commit. */

/**
 * Writes a plan: its marked additions, then its commit. A commit cancelled by a conflict wrote nothing: the same
 * commit is sent again after a backoff (retryOnConflict, until the request's deadline), with the read, the plan and
 * the events' places it has, as if its first send had arrived later. Every action of a commit is either guarded by
 * a condition (the version read, least-busy's count, a free place) or relative (ADD, a set's ADD or DELETE, a put
 * of the entity's own item), so a late send is as right as a first one, and a condition that no longer holds
 * refuses it (the caller decides again). A lost attempt so costs one transaction, where deciding again from the
 * start cost a read, a take and a close of places and the planning (docs/capacity.md, "Contention, measured"). A
 * conflict on a marked block key (block items other commits hold too) is a ConcurrentWrite; a failed condition
 * throws what its action names. After the commit, the index items a deletion marked (`removedAround`) are
 * deleted; a failure of that is given to `onCleanupFailure` when there is one (the change landed: its caller
 * answers for it as landed), else thrown (an erasure's: lib/data/erasures/contact.ts).
 */
export async function writePlan(
  plan: WritePlan,
  options: {
    onCleanupFailure?: ((error: CleanupFailed) => void) | undefined;
    /** Sent once: a conflict is a ConcurrentWrite at once (a batch its writer retries smaller: merge-plans.ts). */
    once?: boolean;
  } = {},
): Promise<void> {
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
      cut.early.length > 0 ? putPlainEntries(cut.early) : undefined,
    ]);
    if (taken.status === 'rejected') throw taken.reason;
    places = taken.value;
    if (early.status === 'rejected') throw early.reason;
    // A create's marked items (pending.ts), once its places are held (a create's were taken with its number: no
    // call), so that a failure here closes them as a failed commit does.
    if (plan.marked) await putMarked(plan.marked);
    const actions = [...cut.commit, ...(places?.actions ?? [])];
    await (options.once ? commit(actions) : retryOnConflict(() => commit(actions)));
    rememberDirectoryEntries(cut.directory);
  } catch (error) {
    // The commit did not land, or may not have: its places are closed (a landed event keeps its place).
    if (places) await settleEventPlaces(places.accountId, places.seqs);
    if (plan.marked) await abandonMarked(plan.marked, error);
    if (isTransactionConflict(error)) throw new ConcurrentWrite({ cause: error });
    throw error;
  }
  // The entity no longer holds them: readers already skip them; the purge deletes again what a crash left here.
  if (plan.removedAround?.length) {
    const left = plan.removedAround.length;
    await batchDeleteAll(plan.removedAround.map((item) => ({ pk: item.pk, sk: item.sk }))).catch(
      (error: unknown) => {
        // The change landed: a failure here is the caller's to report, not the change's (unless it asks so).
        if (!options.onCleanupFailure) throw error;
        options.onCleanupFailure(new CleanupFailed(left, error));
      },
    );
  }
}

/**
 * The deletion after a landed commit of index items its entity no longer holds (WritePlan.removedAround) failed:
 * they stay marked unconfirmed, which readers skip, until the purge of the entity's trash item deletes them.
 */
export class CleanupFailed extends Error {
  constructor(left: number, cause: unknown) {
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`${left} index items a landed change no longer holds were left for the purge (${reason})`, {
      cause,
    });
    this.name = 'CleanupFailed';
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
