import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { addDecimal } from '#lib/decimal.ts';
import { MAX_EVENT_ACTIONS } from '../events.ts';
import { keyString } from '../store/items.ts';
import { type CommitAction, MAX_TRANSACTION_ITEMS, type TransactUpdate } from '../store/transact.ts';
import { addToBlock, combinePlans, type WritePlan } from './additions.ts';

/**
 * Updates of several entities in one commit (a hand-back's page: lib/people/handback.ts): their plans combined, each
 * item they share written once. DynamoDB takes one action an item in a transaction, so the unconditioned `ADD` /
 * `DELETE` updates of one item (a stats cell's deltas, written on one shard: WriteOptions.shard; a block's keys)
 * become one update with the deltas summed and the sets joined, and plain puts of one item (a directory entry) one
 * put. Each entity keeps its own guarded put and its own events. Block keys an update adds go in the commit (never
 * marked before it): mergedFits says whether the whole of it fits one transaction, so nothing is written outside it.
 */

/** The bytes a commit may carry (DynamoDB's 4 MB a transaction, with room for what the estimate misses). */
const MAX_COMMIT_BYTES = 3_000_000;

export function mergePlans(plans: WritePlan[]): WritePlan {
  const all = combinePlans(...plans);
  const blocks = all.additions.flatMap((a) =>
    'block' in a ? [{ what: 'block', action: { Update: addToBlock(a.block) } }] : [],
  );
  const unique = <T extends Record<string, unknown>>(items: T[]) => [
    ...new Map(items.map((i) => [keyString(i), i])).values(),
  ];
  const directory = all.directory && {
    all: unique(all.directory.all),
    fresh: unique(all.directory.fresh),
    plain: all.directory.plain,
  };
  return {
    ...all,
    fixed: coalesce([...all.fixed, ...blocks]),
    additions: all.additions.filter((a) => 'put' in a),
    directory,
  };
}

/**
 * Whether a merged plan fits one transaction whole (its puts and fresh directory entries in it, none marked before
 * it): DynamoDB's 100 actions, and its bytes under MAX_COMMIT_BYTES by the items' JSON (an estimate: DynamoDB
 * counts names and values much as JSON spells them).
 */
export function mergedFits(plan: WritePlan): boolean {
  const drafts = plan.events?.drafts ?? [];
  const actions =
    plan.fixed.length +
    plan.attached.length +
    plan.additions.length +
    (plan.directory?.fresh.length ?? 0) +
    drafts.length * MAX_EVENT_ACTIONS;
  if (actions > MAX_TRANSACTION_ITEMS) return false;
  const bytes = jsonBytes([plan.fixed, plan.attached, plan.additions, plan.directory?.fresh, drafts]);
  return bytes <= MAX_COMMIT_BYTES;
}

const jsonBytes = (value: unknown) =>
  JSON.stringify(value, (_, v: unknown) =>
    v instanceof Set
      ? [...v]
      : v instanceof NumberValue
        ? v.value
        : v instanceof Uint8Array
          ? 'x'.repeat(v.byteLength)
          : v,
  ).length;

/** One action an item: unconditioned ADD/DELETE updates of one item merged; plain puts of one item kept once. */
export function coalesce(actions: CommitAction[]): CommitAction[] {
  const byKey = new Map<string, CommitAction>();
  const out: CommitAction[] = [];
  for (const action of actions) {
    const key = keyOf(action);
    const had = key === undefined ? undefined : byKey.get(key);
    if (key === undefined || !had) {
      if (key !== undefined) byKey.set(key, action);
      out.push(action);
      continue;
    }
    const merged = mergeTwo(had, action);
    if (!merged) throw new Error(`two actions on one item that cannot be merged: ${key} (${action.what})`);
    out[out.indexOf(had)] = merged;
    byKey.set(key, merged);
  }
  return out;
}

function keyOf({ action }: CommitAction): string | undefined {
  const key = action.Update?.Key ?? action.Put?.Item ?? action.Delete?.Key ?? action.ConditionCheck?.Key;
  return key ? keyString(key as { pk?: unknown; sk?: unknown }) : undefined;
}

function mergeTwo(a: CommitAction, b: CommitAction): CommitAction | undefined {
  const [pa, pb] = [a.action.Put, b.action.Put];
  if (pa && pb && !pa.ConditionExpression && !pb.ConditionExpression) return b;
  const [ua, ub] = [a.action.Update, b.action.Update];
  if (!ua || !ub || ua.ConditionExpression || ub.ConditionExpression) return undefined;
  const clauses = [...clausesOf(ua), ...clausesOf(ub)];
  if (clauses.some((c) => c === undefined)) return undefined;
  return { what: a.what, action: { Update: updateOf(ua, clauses as Clause[]) } };
}

/** One clause of an update: ADD or DELETE, the attribute's name, the value. */
interface Clause {
  verb: 'ADD' | 'DELETE';
  name: string;
  value: unknown;
}

/** An update's clauses (undefined for one that is not a plain `ADD …` and/or `DELETE …` of named values). */
function clausesOf(update: TransactUpdate): (Clause | undefined)[] {
  const sections = (update.UpdateExpression ?? '').trim().split(/\s*\b(?=ADD |DELETE |SET |REMOVE )/);
  return sections
    .filter((section) => section.trim() !== '')
    .flatMap((section) => {
      const match = /^(ADD|DELETE) (.+)$/.exec(section.trim());
      if (!match) return [undefined];
      return (match[2] as string).split(/,\s*/).map((clause) => {
        const [path = '', ref = ''] = clause.trim().split(/\s+/);
        const name = path.startsWith('#') ? update.ExpressionAttributeNames?.[path] : path;
        const value = update.ExpressionAttributeValues?.[ref];
        return name === undefined || value === undefined
          ? undefined
          : { verb: match[1] as Clause['verb'], name, value };
      });
    });
}

/** The update of `base`'s item with these clauses, one per verb and attribute: numbers summed, sets joined. */
function updateOf(base: TransactUpdate, clauses: Clause[]): TransactUpdate {
  const joined = new Map<string, Clause>();
  for (const clause of clauses) {
    const id = `${clause.verb} ${clause.name}`;
    const had = joined.get(id);
    joined.set(id, had ? { ...clause, value: join(had.value, clause.value) } : clause);
  }
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sections = new Map<string, string[]>();
  for (const [i, { verb, name, value }] of [...joined.values()].entries()) {
    names[`#m${i}`] = name;
    values[`:m${i}`] = value;
    sections.set(verb, [...(sections.get(verb) ?? []), `#m${i} :m${i}`]);
  }
  return {
    TableName: base.TableName,
    Key: base.Key,
    UpdateExpression: [...sections].map(([verb, parts]) => `${verb} ${parts.join(', ')}`).join(' '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

function join(a: unknown, b: unknown): unknown {
  if (a instanceof Set && b instanceof Set) return new Set([...a, ...b]);
  const text = (v: unknown) => (v instanceof NumberValue ? v.value : String(v));
  return NumberValue.from(addDecimal(text(a), text(b)));
}
