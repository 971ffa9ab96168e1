import { parseTermKey } from '../../keys.ts';
import { batchDeleteAll } from '../../store/client.ts';
import { ATTR, keyString } from '../../store/items.ts';
import { entityItems } from '../items.ts';
import { stillPending } from '../pending.ts';
import { pagesOf } from './pages.ts';
import type { ReindexRun } from './run.ts';

/**
 * The reindex's last phase (account.ts): every terms partition (the shards, the terms' sample, and the one partition
 * of releases before issue 40, whose terms are all stale now: the build put each in its shard), page by page, each term
 * checked against its entity (one BatchGet a page); a term its entity no longer has, of an entity gone, or out of
 * its shard, is deleted. The cursor is the partition's place in that list and the last sort key done there.
 */
export async function sweepTerms<E>(run: ReindexRun<E>): Promise<void> {
  const { index, accountId, progress } = run;
  // The sample last: a cursor saved by a release before it names the same partitions.
  const partitions = [
    index.keys.legacyTermsPartition(accountId),
    ...index.keys.termsPartitions(accountId),
    index.keys.termSamplePartition(accountId),
  ];
  const cursor = () => {
    const at = progress.after ?? '0:';
    const colon = at.indexOf(':');
    return { partition: Number(at.slice(0, colon)), after: at.slice(colon + 1) || undefined };
  };
  for (let p = cursor().partition; p < partitions.length; p++) {
    const pages = pagesOf(partitions[p] as string, () => cursor().after, {
      limit: run.pageSize,
      projection: 'pk, sk, #u',
      names: { '#u': ATTR.unconfirmed },
    });
    for await (const { items } of pages) {
      const terms = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
      // A create's marked term whose pending item is there: its commit may yet land (pending.ts).
      const underWay = await stillPending(run.index, run.accountId, items);
      const stale = (await staleTerms(run, terms)).filter((t) => !underWay.has(t.sk));
      await batchDeleteAll(stale);
      progress.removed += stale.length;
      progress.after = `${p}:${terms[terms.length - 1]?.sk ?? ''}`;
      await run.save();
    }
    progress.after = `${p + 1}:`;
  }
}

/** The terms of a page that their entity (one BatchGet of the page's) does not have where they are. */
async function staleTerms<E>(run: ReindexRun<E>, terms: { pk: string; sk: string }[]) {
  const { index, accountId } = run;
  const entities = await run.entitiesAt(terms.map((t) => parseTermKey(t.sk).orderKey));
  // Each entity's own terms, built once a page (a term's key costs a keyed hash a character: keyed.ts).
  const own = new Map<string, Set<string>>();
  for (const [orderKey, entity] of entities) {
    const built = entityItems(index, accountId, entity);
    own.set(
      orderKey,
      new Set([...(built.numberTerm ? [built.numberTerm] : []), ...built.prefixTerms].map(keyString)),
    );
  }
  return terms.filter((term) => !own.get(parseTermKey(term.sk).orderKey)?.has(keyString(term)));
}
