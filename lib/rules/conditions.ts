import { customFieldText } from '#lib/tickets/types.ts';
import { type ChangeFacts, conditionField, type FieldValue, type RuleSubject, readField } from './fields.ts';
import type { Condition, Conditions, Scalar } from './types.ts';

/**
 * Whether a condition holds (decisions.md, "Business rules"; docs/rules.md, "Comparing values"). Text compares
 * case-insensitively for every op (an address or a subject is the same whatever its case), a custom field by its
 * JSON text form as the list filter does (`3` is `"3"`), ids as numbers, tags as a set of case-insensitive tags.
 */

/** What a condition is looked at with: the ticket now, the ticket before the change (null: a new ticket). */
export interface ConditionInput {
  now: RuleSubject;
  before: RuleSubject | null;
  facts: ChangeFacts;
}

const fold = (x: Scalar): string | number | boolean | null => (typeof x === 'string' ? x.toLowerCase() : x);

/** Two scalars as equal as the field's kind makes them. */
function same(a: Scalar, b: Scalar, custom: boolean): boolean {
  if (a === null || b === null) return a === b;
  if (custom) return customFieldText(a).toLowerCase() === customFieldText(b).toLowerCase();
  return fold(a) === fold(b);
}

const hasTag = (tags: readonly string[], tag: Scalar) =>
  typeof tag === 'string' && tags.some((t) => t.toLowerCase() === tag.toLowerCase());

const isPresent = (value: FieldValue) =>
  Array.isArray(value) ? value.length > 0 : value !== null && value !== '';

function sameValue(a: FieldValue, b: FieldValue, custom: boolean): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    const left = Array.isArray(a) ? a : [];
    const right = Array.isArray(b) ? b : [];
    return left.length === right.length && left.every((t) => hasTag(right, t));
  }
  return same(a, b, custom);
}

/** `value` as a list (`in`, `not_in`), or as the one value of the other ops. */
const listOf = (value: Condition['value']): Scalar[] =>
  Array.isArray(value) ? value : value === undefined ? [] : [value];
const oneOf = (value: Condition['value']): Scalar =>
  Array.isArray(value) ? (value[0] ?? null) : (value ?? null);

/** Is the scalar `value` what `actual` is (a tag among the tags, for the tags)? */
function matches(actual: FieldValue, value: Scalar, custom: boolean): boolean {
  return Array.isArray(actual) ? hasTag(actual, value) : same(actual, value, custom);
}

function contains(actual: FieldValue, value: Scalar, custom: boolean): boolean {
  if (Array.isArray(actual)) return hasTag(actual, value);
  if (actual === null || value === null) return false;
  const text = custom ? customFieldText(actual) : String(actual);
  return text.toLowerCase().includes(String(value).toLowerCase());
}

/** Whether the condition holds, and the ticket's value it was looked at with (for `rules/test`'s "why not"). */
export function conditionHolds(
  condition: Condition,
  input: ConditionInput,
): { holds: boolean; actual: FieldValue } {
  const custom = conditionField(condition.field)?.kind === 'custom';
  const actual = readField(input.now, condition.field, input.facts);
  const value = condition.value;
  switch (condition.op) {
    case 'is':
      return { holds: matches(actual, oneOf(value), custom), actual };
    case 'is_not':
      return { holds: !matches(actual, oneOf(value), custom), actual };
    case 'in':
      return { holds: listOf(value).some((x) => matches(actual, x, custom)), actual };
    case 'not_in':
      return { holds: !listOf(value).some((x) => matches(actual, x, custom)), actual };
    case 'contains':
      return { holds: contains(actual, oneOf(value), custom), actual };
    case 'not_contains':
      return { holds: !contains(actual, oneOf(value), custom), actual };
    case 'present':
      return { holds: isPresent(actual), actual };
    case 'absent':
      return { holds: !isPresent(actual), actual };
    default:
      return { holds: changeHolds(condition, input, actual, custom), actual };
  }
}

/**
 * `changed`, `changed_from X`, `changed_to X`: the field's value before the change against its value now. On the
 * tags, `changed_to X` is "X was added" and `changed_from X` "X was removed". A new ticket has changed nothing.
 */
function changeHolds(condition: Condition, input: ConditionInput, now: FieldValue, custom: boolean): boolean {
  if (input.before === null) return false;
  const was = readField(input.before, condition.field, input.facts);
  if (sameValue(was, now, custom)) return false;
  if (condition.op === 'changed') return true;
  const value = oneOf(condition.value);
  const [from, to] = condition.op === 'changed_from' ? [was, now] : [now, was];
  if (Array.isArray(from) && Array.isArray(to)) return hasTag(from, value) && !hasTag(to, value);
  return matches(from, value, custom);
}

/** Where a condition sits in its rule, as a 422 and `rules/test` name it (`conditions.all.0`). */
export interface PlacedCondition {
  path: string;
  condition: Condition;
}

/** The first condition that fails, with the ticket's value; null: the rule's conditions hold. */
export function firstFailure(
  conditions: Conditions,
  input: ConditionInput,
): (PlacedCondition & { actual: FieldValue }) | null {
  for (const [index, condition] of conditions.all.entries()) {
    const { holds, actual } = conditionHolds(condition, input);
    if (!holds) return { path: `conditions.all.${index}`, condition, actual };
  }
  if (conditions.any.length === 0) return null;
  const looked = conditions.any.map((condition) => conditionHolds(condition, input));
  if (looked.some((x) => x.holds)) return null;
  const first = conditions.any[0] as Condition;
  return { path: 'conditions.any.0', condition: first, actual: (looked[0] as { actual: FieldValue }).actual };
}

/** The conditions that held when a rule fired: every one of `all`, and those of `any` that held. */
export function matchedConditions(conditions: Conditions, input: ConditionInput): PlacedCondition[] {
  return [
    ...conditions.all.map((condition, index) => ({ path: `conditions.all.${index}`, condition })),
    ...conditions.any.flatMap((condition, index) =>
      conditionHolds(condition, input).holds ? [{ path: `conditions.any.${index}`, condition }] : [],
    ),
  ];
}
