import { firedCounts } from '#lib/data/rules/firings.ts';
import { nowMicros } from '#lib/time.ts';
import type { FiredCounts, Rule } from './types.ts';

/**
 * A rule's `fired` (decisions.md, "Business rules"; docs/rules.md, "`fired`"): the exact firings of its last hour,
 * day and week, read from the firings its changes wrote (lib/data/rules/firings.ts) whenever a rule is answered.
 */

/** A rule with its firings counted: what every rule answer shows. */
export type CountedRule = Rule & { fired: FiredCounts };

/** A rule just made has fired nowhere yet: its counts need no read. */
export const NO_FIRINGS: FiredCounts = { last_hour: 0, last_day: 0, last_week: 0 };

/** Each rule's firings, counted now (one Query a rule, at once). */
export async function firingsOf(
  accountId: string,
  ids: readonly number[],
): Promise<Map<number, FiredCounts>> {
  return ids.length === 0 ? new Map() : firedCounts(accountId, ids, nowMicros());
}

/** The rules with their firings counted now. */
export async function counted(accountId: string, rules: readonly Rule[]): Promise<CountedRule[]> {
  const counts = await firingsOf(
    accountId,
    rules.map((r) => r.id),
  );
  return rules.map((rule) => ({ ...rule, fired: counts.get(rule.id) ?? NO_FIRINGS }));
}
