import { parseTermKey } from '../keys.ts';
import { queryAll, tableName } from '../store/client.ts';
import { ReadBudgetExceeded } from '../store/errors.ts';
import { ATTR } from '../store/items.ts';
import { confirmedTerms, type DeferredMarks, markedKey } from './confirmed.ts';
import type { Index } from './items.ts';
import { keyedTerm } from './keyed.ts';
import { sampleRefusal } from './term-sample.ts';

/**
 * The reads of a search word: its terms' keys (queryTerm), and beside them its sample's (sampleRefuses), which
 * refuses a word that matches too much from one small Query (term-sample.ts).
 */

/** The highest code point: `prefix + PREFIX_RANGE_END` sorts after every string that starts with prefix. */
const PREFIX_RANGE_END = '\u{10FFFF}';

/**
 * A Query of a partition's sort keys that start with `prefix`, as a key range: the same items as begins_with, and
 * DynamoDB Local serves a range from its index where it scans the whole partition for begins_with (measured: 4 ms
 * vs 30 ms at 50k terms).
 */
const prefixRange = (pk: string, prefix: string) => ({
  TableName: tableName(),
  KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
  ExpressionAttributeValues: { ':pk': pk, ':from': prefix, ':to': `${prefix}${PREFIX_RANGE_END}` },
});

/**
 * Order keys of the entities a search word matches: prefix terms, and the bare number when it is one. At most
 * `budget` term keys are read (shared by the two ranges): a word whose range fills its share is refused
 * (ReadBudgetExceeded), since its matches are not counted anywhere and reading on could take millions.
 */
export async function queryTerm<E>(
  index: Index<E>,
  accountId: string,
  word: string,
  budget = Number.POSITIVE_INFINITY,
  deferred?: DeferredMarks,
  /** Where the keys its sample's probe read are added (the intersection takes them out of its budget). */
  probed?: { keys: number },
): Promise<Set<string>> {
  const { keys } = index;
  // A word matches the terms it is a prefix of, and a word's key is a prefix of exactly their keys (keyedTerm);
  // a bare number also matches that number exactly. Keyed terms hold no `#`, the key's separator: the range
  // holds only terms the word's key starts (the check on each term says so).
  const wordKey = keyedTerm(accountId, word);
  // A word of two characters or more finds its terms in one shard (keys.ts, termShard); one of a character reads
  // every shard, each up to its part of the word's share of the budget (refused once one fills it).
  const ranges = [
    {
      prefix: keys.prefixTermQuery(wordKey),
      matches: (term: string) => term.startsWith(wordKey),
      partitions: keys.termsPartitionsOfWord(accountId, wordKey),
      numbered: false,
    },
  ];
  if (/^\d+$/.test(word)) {
    ranges.push({
      prefix: keys.numberTermQuery(String(Number(word))),
      matches: () => true,
      partitions: [keys.numberTermPartition(accountId, Number(word))],
      numbered: true,
    });
  }
  const share = Math.max(1, Math.floor(budget / ranges.length));
  const reads = ranges.flatMap(({ partitions, ...range }) =>
    partitions.map((pk) => ({ ...range, pk, of: partitions.length })),
  );
  // The word's sample (term-sample.ts) beside its reads, out of the same share, where it reads at most a sixteenth
  // of it (a share of ~1,600 keys or more): a word it refuses is refused at once, its reads stopped after the page
  // in flight; otherwise the reads decide, exactly. Its refusal is that of a read of the whole share, more than its
  // reads are left: a word it refuses would fill them (but for a chance below 1e-16: term-sample.ts).
  const sampled = sampleRefusal(share);
  const probing = Number.isFinite(share) && sampled <= share / 16;
  const [words] = ranges as [(typeof ranges)[number]];
  let refused = false;
  const probe = probing
    ? sampleRefuses(index, accountId, words.prefix, sampled, probed).then((no) => (refused = no))
    : undefined;
  const reading = Promise.all(
    reads.map(async ({ prefix, matches, pk, of, numbered }) => {
      const left = probing && !numbered ? share - sampled : share;
      const read = Number.isFinite(left) ? Math.max(1, Math.floor(left / of)) : undefined;
      const items = await queryAll(
        {
          ...prefixRange(pk, prefix),
          ProjectionExpression: 'sk, #u',
          ExpressionAttributeNames: { '#u': ATTR.unconfirmed },
          ConsistentRead: true,
        },
        read,
        () => refused,
      );
      if (read !== undefined && items.length >= read) throw new ReadBudgetExceeded('search');
      return items.flatMap((item) => {
        const { term, orderKey } = parseTermKey(item.sk as string);
        // A number's term is held by the entity of that number: its order key names it.
        return matches(term) ? [{ term: numbered ? undefined : term, ...markedKey(orderKey, item) }] : [];
      });
    }),
  );
  // Refused when either says so: the answer is the data's, never the race's (a word whose reads end first is still
  // refused when its sample says so).
  const decided = probe?.then((no) => {
    if (no) throw new ReadBudgetExceeded('search');
  });
  const [found] = await Promise.all([reading, decided]);
  return new Set(await confirmedTerms(index, accountId, found.flat(), deferred));
}

/**
 * Whether the sample refuses the word whose term keys start `prefix` (prefixTermQuery): `refusal` (sampleRefusal)
 * of its sampled keys or more, read by one Query of at most that many key items, eventually consistent (an
 * estimate: a create landing now changes nothing it decides).
 */
export async function sampleRefuses<E>(
  index: Index<E>,
  accountId: string,
  prefix: string,
  refusal: number,
  probed?: { keys: number },
): Promise<boolean> {
  const items = await queryAll(
    {
      ...prefixRange(index.keys.termSamplePartition(accountId), prefix),
      ProjectionExpression: 'sk',
    },
    refusal,
  );
  if (probed) probed.keys += items.length;
  return items.length >= refusal;
}
