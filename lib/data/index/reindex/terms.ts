import { parseTermKey } from '../../keys.ts';
import { batchDeleteAll } from '../../store/client.ts';
import { keyString } from '../../store/items.ts';
import { entityItems } from '../items.ts';
import { pagesOf } from './pages.ts';
import type { ReindexRun } from './run.ts';

/**
 * The reindex's last phase (account.ts): the terms partition, page by page, each term checked against its entity
 * (one BatchGet a page); a term its entity no longer has, or of an entity gone, is deleted.
 */
export async function sweepTerms<E>(run: ReindexRun<E>): Promise<void> {
  const { index, accountId, progress } = run;
  const pages = pagesOf(index.keys.termsPartition(accountId), () => progress.after, {
    limit: run.pageSize,
    projection: 'pk, sk',
  });
  for await (const { items } of pages) {
    const terms = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
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
    const stale = terms.filter((term) => !own.get(parseTermKey(term.sk).orderKey)?.has(keyString(term)));
    await batchDeleteAll(stale);
    progress.removed += stale.length;
    progress.after = terms[terms.length - 1]?.sk;
    await run.save();
  }
}
