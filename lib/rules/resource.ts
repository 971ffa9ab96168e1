import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { getOrganizations } from '#lib/data/organizations/organizations.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import {
  getStoredRule,
  RuleGone,
  type RulesMeta,
  readRulesMeta,
  storedRules,
  writeRule,
} from '#lib/data/rules/rules.ts';
import { ConcurrentWrite, retryOnConflict } from '#lib/data/store/errors.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { formatTimestamp, nowMicros, nowMillis } from '#lib/time.ts';
import { deleteVersioned, updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import { rulesChanged } from './cache.ts';
import { type CountedRule, counted, firingsOf, NO_FIRINGS } from './fired.ts';
import type { RuleCursor } from './list-query.ts';
import { pathId } from './list-query.ts';
import { parseRulePatch, presentRule } from './present.ts';
import { namedOrganizationIds, type RuleReferences, referencesOf } from './references.ts';
import { parseRule } from './schemas.ts';
import { RULE_SWEEP_DELAY_MS } from './sweep.ts';
import { byPosition, type FiredCounts, type Rule } from './types.ts';

/**
 * Rules as a resource (decisions.md, "Business rules"; docs/rules.md, "Rules and macros as resources"): list in
 * the evaluator's order, read, create, PATCH and delete, each write with its event and the account's `META`
 * (lib/data/rules/rules.ts) in one transaction, so the 1,000 active rules cannot be passed by racing writes.
 */

/** A rule as its answers and events show it, with its firings counted (./fired.ts). */
export const showRule = (rule: CountedRule) => presentRule(rule, rule.fired);
/** A rule's wire form whatever its firings: what its size and a PATCH's sameness are judged on. */
const shownBody = (rule: Rule) => presentRule(rule, NO_FIRINGS);
const withFired = (rule: Rule, fired: FiredCounts): CountedRule => ({ ...rule, fired });
/** When a write's moment sweep is due: once every change after it reads the new rules (./sweep.ts). */
const sweepAt = () => nowMillis() + RULE_SWEEP_DELAY_MS;

const CHANGED = 'The rule has changed since you read it (If-Match does not match its ETag).';

/**
 * The most a rule or macro takes as stored (UTF-8 JSON): a DynamoDB item holds 400 KB, and the rules cache holds
 * an account's active rules whole (docs/rules.md, "The store"). Bodies of up to 65,536 characters each pass alone;
 * twenty of them together do not.
 */
export const MAX_RULE_BYTES = 100_000;

/** A 422 on `actions` when the rule or macro would be larger than MAX_RULE_BYTES. */
export function refuseOversized(shown: unknown): void {
  if (Buffer.byteLength(JSON.stringify(shown)) > MAX_RULE_BYTES) {
    throw ValidationFailed.field(
      'actions',
      `The rule is too large to store: at most ${MAX_RULE_BYTES} bytes together (the bodies take the most).`,
    );
  }
}

type Attach<T> = ((result: T) => CommitAttachment) | undefined;

/** What a rule body may name: the configuration's teams, agents and categories, the organizations it names. */
export async function ruleReferences(
  accountId: string,
  bodies: unknown[],
  otherActiveRules: number,
): Promise<RuleReferences> {
  const ids = [...new Set(bodies.flatMap(namedOrganizationIds))];
  const [config, organizations] = await Promise.all([
    getAccountConfig(accountId),
    getOrganizations(accountId, ids),
  ]);
  if (!config) throw new NotFound();
  return referencesOf(config, organizations, otherActiveRules);
}

export async function findRule(accountId: string, ref: string): Promise<Versioned<Rule> | undefined> {
  const id = pathId(ref);
  const rule = id === undefined ? undefined : await getStoredRule(accountId, id);
  return rule && { entity: rule, version: rule.version };
}

/** The firings of the rule `ref` names (none, and no read, when it names none). */
const firingsOfRef = async (accountId: string, ref: string) => {
  const id = pathId(ref);
  return id === undefined ? NO_FIRINGS : ((await firingsOf(accountId, [id])).get(id) ?? NO_FIRINGS);
};

/** The rule and its firings, read at once. */
export async function getRule(accountId: string, ref: string): Promise<CountedRule> {
  const [found, fired] = await Promise.all([findRule(accountId, ref), firingsOfRef(accountId, ref)]);
  if (!found) throw new NotFound();
  return withFired(found.entity, fired);
}

/** `GET /api/rules`: by position then id, after the cursor; `next_cursor` the last one's `<position>.<id>`. */
export async function listRules(accountId: string, query: { after: RuleCursor | undefined; limit: number }) {
  const all = (await storedRules(accountId)).sort(byPosition);
  const { after } = query;
  const rest = after ? all.filter((r) => byPosition(r, after) > 0) : all;
  const page = rest.slice(0, query.limit);
  const last = page.at(-1);
  return {
    data: (await counted(accountId, page)).map(showRule),
    next_cursor: rest.length > page.length && last ? `${last.position}.${last.id}` : null,
  };
}

/** `POST /api/rules`: checked against the account, last by default, `rule.created`. */
export async function createRule(accountId: string, body: unknown, attach?: Attach<CountedRule>) {
  let id: number | undefined;
  const rule = await retryOnConflict(
    async () => {
      const meta = await readRulesMeta(accountId);
      const input = parseRule(body, await ruleReferences(accountId, [body], meta.active));
      id ??= (await reserveIds(accountId, { rule: 1 })).rule as number;
      const at = formatTimestamp(nowMicros());
      const made: Rule = {
        ...input,
        id,
        position: input.position ?? meta.top + 1,
        version: 1,
        createdAt: at,
        updatedAt: at,
      };
      refuseOversized(shownBody(made));
      // A rule just made has fired nowhere: no read.
      const shown = withFired(made, NO_FIRINGS);
      const event = createdEvent('rule', showRule(shown));
      await writeRule(
        accountId,
        { before: undefined, after: made, meta },
        { event, attach: attach?.(shown), sweepAtMs: sweepAt() },
      );
      return shown;
    },
    { retryable: (error) => error instanceof ConcurrentWrite },
  );
  rulesChanged(accountId);
  return rule;
}

const answerOf = (error: unknown) => (error instanceof RuleGone ? new NotFound() : error);

/** `PATCH /api/rules/{rule}`: the fields sent replace the rule's, the result checked as a create; If-Match. */
export async function updateRule(
  accountId: string,
  ref: string,
  body: unknown,
  options: { ifMatch?: string | undefined; attach?: Attach<CountedRule> } = {},
): Promise<CountedRule> {
  let meta: RulesMeta | undefined;
  let refs: RuleReferences | undefined;
  let fired = NO_FIRINGS;
  const updated = await updateVersioned<Rule>({
    read: async () => {
      const [found, read, counts] = await Promise.all([
        findRule(accountId, ref),
        readRulesMeta(accountId),
        firingsOfRef(accountId, ref),
      ]);
      [meta, fired] = [read, counts];
      const others = found ? read.active - (found.entity.active ? 1 : 0) : 0;
      refs = found && (await ruleReferences(accountId, [body, shownBody(found.entity)], others));
      return found;
    },
    apply: (before) => {
      const input = parseRulePatch(before, body, refs as RuleReferences);
      const after: Rule = { ...before, ...input, position: input.position ?? before.position };
      refuseOversized(shownBody(after));
      return isSame(before, after) ? before : { ...after, updatedAt: formatTimestamp(nowMicros()) };
    },
    write: async (before, after, version) => {
      const next = { ...after, version: version + 1 };
      const event = updatedEvent(
        'rule',
        showRule(withFired(before, fired)),
        showRule(withFired(next, fired)),
        version + 1,
      );
      await writeRule(
        accountId,
        { before, after: next, meta: meta as RulesMeta },
        { event, attach: options.attach?.(withFired(next, fired)), sweepAtMs: sweepAt() },
      ).catch((error) => {
        throw answerOf(error);
      });
      return version + 1;
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  rulesChanged(accountId);
  return withFired({ ...updated.entity, version: updated.version }, fired);
}

const isSame = (a: Rule, b: Rule) => JSON.stringify(shownBody(a)) === JSON.stringify(shownBody(b));

/** `DELETE /api/rules/{rule}`: removed for good, `rule.deleted`; answers the rule as it was. If-Match as PATCH. */
export async function deleteRule(
  accountId: string,
  ref: string,
  options: { ifMatch?: string | undefined; attach?: Attach<CountedRule> } = {},
): Promise<CountedRule> {
  let meta: RulesMeta | undefined;
  let fired = NO_FIRINGS;
  const deleted = await deleteVersioned<Rule>({
    read: async () => {
      const [found, read, counts] = await Promise.all([
        findRule(accountId, ref),
        readRulesMeta(accountId),
        firingsOfRef(accountId, ref),
      ]);
      [meta, fired] = [read, counts];
      return found;
    },
    remove: async ({ entity, version }) => {
      const shown = withFired(entity, fired);
      const event = { type: 'rule.deleted', object: showRule(shown), version: version + 1 };
      await writeRule(
        accountId,
        { before: entity, after: undefined, meta: meta as RulesMeta },
        { event, attach: options.attach?.(shown), sweepAtMs: sweepAt() },
      ).catch((error) => {
        throw answerOf(error);
      });
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  rulesChanged(accountId);
  return withFired(deleted.entity, fired);
}
