import type { Macro, Rule } from '#lib/rules/types.ts';
import { raiseRulesVersion } from '../accounts/config-version.ts';
import { commitWithEvents, type EventDraft } from '../events.ts';
import { ruleKeys } from '../keys.ts';
import { type CommitAttachment, completionCommit } from '../requests/idempotency.ts';
import { getItem, queryAll, tableName } from '../store/client.ts';
import { ConcurrentWrite, StaleVersion } from '../store/errors.ts';
import { ATTR, entityOf } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { ruleSweepAction } from './sweeps.ts';

/**
 * Rules and macros in the store (docs/rules.md, "The store"; keys/rules.ts): an item each, versioned (`v`, the
 * ETag) as organizations are. Every rule write also writes the account's `META` item on the condition that it is
 * as read: the count of active rules it sets is then exact (two creates racing for the 1,000th place cannot both
 * land: one reads again and is a 422), and the rules version it moves tells every container's rules cache to read
 * again. A change, its event and an Idempotency-Key's answer are one transaction.
 */

/** The account's rules as a whole: what every rule write reads and moves. */
export interface RulesMeta {
  /** Active rules (at most 1,000). */
  active: number;
  /** Moved by every rule write (0: no rule was ever written). */
  version: number;
  /** The highest position given: a new rule without one goes after it. */
  top: number;
}

/** The rule or macro is not (or no longer) stored: nothing was written. */
export class RuleGone extends Error {
  constructor() {
    super('No such rule or macro');
  }
}

const metaOf = (item: Record<string, unknown> | undefined): RulesMeta => ({
  active: Number(item?.[ATTR.count] ?? 0),
  version: Number(item?.rv ?? 0),
  top: Number(item?.top ?? 0),
});

export const readRulesMeta = async (accountId: string): Promise<RulesMeta> =>
  metaOf(await getItem(ruleKeys.meta(accountId)));

const ruleOf = (item: Record<string, unknown>): Rule => ({
  ...entityOf<Omit<Rule, 'version'>>(item),
  version: Number(item[ATTR.version] ?? 1),
});
const macroOf = (item: Record<string, unknown>) => ({
  entity: entityOf<Macro>(item),
  version: Number(item[ATTR.version] ?? 1),
});

export async function getStoredRule(accountId: string, id: number): Promise<Rule | undefined> {
  const item = await getItem(ruleKeys.rule(accountId, id));
  return item ? ruleOf(item) : undefined;
}

const rangeQuery = (accountId: string, range: { from: string; to: string }) => ({
  TableName: tableName(),
  KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
  ExpressionAttributeValues: { ':pk': ruleKeys.partition(accountId), ':from': range.from, ':to': range.to },
  ConsistentRead: true,
});

/** Every rule of the account, active or not, by id: one Query (a page per MB). */
export async function storedRules(accountId: string): Promise<Rule[]> {
  return (await queryAll(rangeQuery(accountId, ruleKeys.rules()))).map(ruleOf);
}

/**
 * The account's active rules and the rules version they are at: one Query of `META` and the rules (the version
 * read first, so the rules read hold every change up to it), the inactive ones left out by the store.
 */
export async function activeRules(accountId: string): Promise<{ version: number; rules: Rule[] }> {
  const query = rangeQuery(accountId, ruleKeys.rules(true));
  const items = await queryAll({
    ...query,
    // `META` is the item with a rules version (a key cannot be filtered on).
    FilterExpression: 'attribute_exists(#rv) OR #active = :true',
    ExpressionAttributeNames: { '#rv': 'rv', '#active': 'active' },
    ExpressionAttributeValues: { ...query.ExpressionAttributeValues, ':true': true },
  });
  const meta = items.find((item) => item.sk === 'META');
  return { version: metaOf(meta).version, rules: items.filter((item) => item !== meta).map(ruleOf) };
}

/** What a rule write is: a create (`before` undefined), a change, or a deletion (`after` undefined). */
export interface RuleWrite {
  before: Rule | undefined;
  after: Rule | undefined;
  /** The account's rules as read before the write (its condition). */
  meta: RulesMeta;
}

function metaAction(accountId: string, write: RuleWrite, next: number): CommitAction {
  const { before, after, meta } = write;
  const active = meta.active - (before?.active ? 1 : 0) + (after?.active ? 1 : 0);
  const guard =
    meta.version === 0
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : { ConditionExpression: '#rv = :old', ExpressionAttributeValues: { ':old': meta.version } };
  return {
    what: 'rules_meta',
    action: {
      Update: {
        TableName: tableName(),
        Key: ruleKeys.meta(accountId),
        UpdateExpression: 'SET #n = :n, #rv = :rv, #top = :top',
        ExpressionAttributeNames: { '#n': ATTR.count, '#rv': 'rv', '#top': 'top' },
        ...guard,
        ExpressionAttributeValues: {
          ...guard.ExpressionAttributeValues,
          ':n': active,
          ':rv': next,
          ':top': Math.max(meta.top, after?.position ?? 0),
        },
      },
    },
    // Another rule write landed since the read: the caller reads again and decides again.
    refused: () => new ConcurrentWrite(),
  };
}

/** An item's write guarded by the version read: a Put (new when `version` is 0) or a Delete. */
function itemAction(
  key: { pk: string; sk: string },
  what: string,
  version: number,
  item?: Record<string, unknown>,
): CommitAction {
  const guard =
    version === 0
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : {
          ConditionExpression: '#v = :v',
          ExpressionAttributeNames: { '#v': ATTR.version },
          ExpressionAttributeValues: { ':v': version },
        };
  const body = { TableName: tableName(), ...guard, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const };
  return {
    what,
    action: item
      ? { Put: { ...body, Item: { ...key, type: what, [ATTR.version]: version + 1, ...item } } }
      : { Delete: { ...body, Key: key } },
    refused: (held) => (held ? new StaleVersion() : new RuleGone()),
  };
}

const ruleItem = ({ version: _, ...rule }: Rule) => rule;

/** Whether a write moves tickets' time-rule moments: an active time rule before it or after it. */
export const touchesMoments = (write: RuleWrite) =>
  [write.before, write.after].some((rule) => rule?.active && rule.on === 'time');

/**
 * Writes a rule's create, change or deletion with the account's `META`, its event and the kept answer; one that
 * touches moments also (re)writes the account's moment sweep, due at `sweepAtMs` (./sweeps.ts).
 */
export async function writeRule(
  accountId: string,
  write: RuleWrite,
  options: { event: EventDraft; attach?: CommitAttachment | undefined; sweepAtMs: number },
): Promise<void> {
  const rule = (write.after ?? write.before) as Rule;
  const version = write.before?.version ?? 0;
  // Every request that starts from here on reads a version the cached rules do not hold yet (../accounts/config-version.ts):
  // META's next, or past a raise whose commit failed.
  const rulesVersion = await raiseRulesVersion(accountId, write.meta.version + 1);
  const sweep = touchesMoments(write) ? [ruleSweepAction(accountId, rulesVersion, options.sweepAtMs)] : [];
  const actions = [
    itemAction(ruleKeys.rule(accountId, rule.id), 'rule', version, write.after && ruleItem(write.after)),
    metaAction(accountId, write, rulesVersion),
    ...sweep,
    ...completionCommit(options.attach),
  ];
  await commitWithEvents(accountId, actions, [options.event]);
}

export async function getStoredMacro(accountId: string, id: number) {
  const item = await getItem(ruleKeys.macro(accountId, id));
  return item ? macroOf(item) : undefined;
}

/** Up to `limit` macros with an id above `after`, by id: one Query. */
export async function macrosAfter(accountId: string, after: number, limit: number): Promise<Macro[]> {
  const items = await queryAll(rangeQuery(accountId, ruleKeys.macrosAbove(after)), limit);
  return items.map((item) => macroOf(item).entity);
}

/** Writes a macro's create (`version` 0), change or deletion (`macro` undefined), its event and the kept answer. */
export async function writeMacro(
  accountId: string,
  change: { id: number; version: number; macro: Macro | undefined },
  options: { event: EventDraft; attach?: CommitAttachment | undefined },
): Promise<void> {
  const action = itemAction(
    ruleKeys.macro(accountId, change.id),
    'macro',
    change.version,
    change.macro && { ...change.macro },
  );
  await commitWithEvents(accountId, [action, ...completionCommit(options.attach)], [options.event]);
}
