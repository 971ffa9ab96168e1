import { setTimeout as sleep } from 'node:timers/promises';
import { touchedAfter } from '#lib/data/erasures.ts';
import { refsStep } from '../copies.ts';
import { endObject, type Move, next, startObject } from '../move.ts';

/**
 * How long the recheck waits for the indexes to show what landed before the job's last commit (DynamoDB's global
 * secondary indexes are eventually consistent, typically well under a second): ERASURE_INDEX_SETTLE_MS, 1 s.
 */
const indexSettleMs = () => Number(process.env.ERASURE_INDEX_SETTLE_MS ?? 1_000);

/**
 * Phase `recheck`: each object's copies once more, now that the indexes have caught up: an object's references
 * were read right after its commit, and a global secondary index shows a write some time after it lands (under a
 * second, not guaranteed), so a copy a racing write made just before that commit may have been missed. The
 * contact's first (p.at '' after it), then every ticket and deal the job changed (its TOUCHED items, in key
 * order). Rewriting what is already erased changes nothing.
 */
export async function recheck({ accountId, record, p, options, count }: Move): Promise<undefined> {
  if (p.object !== null) {
    if (await refsStep(accountId, p, count, options)) endObject(p);
    return;
  }
  if (p.at === null) {
    await sleep(indexSettleMs());
    p.at = '';
    if (p.contact) {
      startObject(p, p.contact.uuid, 'refs');
      return;
    }
  }
  const touched = await touchedAfter(accountId, record.id, p.at);
  if (!touched) next(p, 'dimensions');
  else {
    p.at = touched.at;
    startObject(p, touched.uuid, 'refs');
  }
}
