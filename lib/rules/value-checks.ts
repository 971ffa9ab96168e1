import { unstorableNumber } from '#lib/number-fields.ts';
import { MAX_CUSTOM_FIELD_STRING } from '#lib/tickets/schemas.ts';
import type { FieldSpec } from './fields.ts';
import type { RuleReferences } from './references.ts';

/**
 * The checks of a rule's values that need the catalogue (fields.ts) and the account (references.ts), which a
 * schema of shapes alone cannot say: each problem names its path inside the rule, as the 422 body shows it.
 */

export type Path = (string | number)[];
export interface Problem {
  path: Path;
  message: string;
}

/** The longest text a condition compares with. */
export const MAX_CONDITION_TEXT = MAX_CUSTOM_FIELD_STRING;
export const MAX_TAG_LENGTH = 64;

const INVALID = 'The selected value is invalid.';

const isId = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 1;

/** Whether `id` names one of the account's entities of the field's kind (an action: an active agent). */
function known(spec: FieldSpec, value: unknown, refs: RuleReferences, forAction: boolean): boolean {
  switch (spec.reference) {
    case 'team':
      return isId(value) && refs.teamIds.has(value);
    case 'agent':
      return isId(value) && (forAction ? refs.activeAgentIds : refs.agentIds).has(value);
    case 'organization':
      return isId(value) && refs.organizationIds.has(value);
    default:
      return typeof value === 'string' && refs.categorySlugs.has(value);
  }
}

/** A text value: a non-empty string of at most 1,024 characters. */
export function textProblem(value: unknown, name = 'value'): string | undefined {
  if (typeof value !== 'string') return `The ${name} field must be a string.`;
  if (value.trim() === '') return `The ${name} field is required.`;
  if (value.length > MAX_CONDITION_TEXT) {
    return `The ${name} field must not be greater than ${MAX_CONDITION_TEXT} characters.`;
  }
  return undefined;
}

/** A tag as tickets take them: a string of 1 to 64 characters once trimmed. */
export function tagProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'Each tag must be a string.';
  if (value.trim() === '') return 'A tag must not be empty.';
  if (value.trim().length > MAX_TAG_LENGTH) {
    return `A tag must not be greater than ${MAX_TAG_LENGTH} characters.`;
  }
  return undefined;
}

/** A custom field's value: a string of at most 1,024 characters, a number the store keeps exactly, a boolean. */
function customProblem(value: unknown): string | undefined {
  if (typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return unstorableNumber('value', value);
  if (typeof value === 'string') {
    return value.length > MAX_CUSTOM_FIELD_STRING
      ? `The value field must not be greater than ${MAX_CUSTOM_FIELD_STRING} characters.`
      : undefined;
  }
  return 'The value field must be a string, number or boolean.';
}

/**
 * The problem of one value of a field, or undefined. `nullable`: null is a value (no team, unassigned, no
 * category, a custom field removed). `forAction`: a `set` action's value (an agent must be active).
 */
export function scalarProblem(
  spec: FieldSpec,
  value: unknown,
  refs: RuleReferences,
  options: { nullable: boolean; forAction: boolean },
): string | undefined {
  if (value === undefined) return 'The value field is required.';
  if (value === null) {
    return options.nullable && (spec.kind === 'reference' || spec.kind === 'custom')
      ? undefined
      : 'The value field is required.';
  }
  switch (spec.kind) {
    case 'choice':
      return (spec.choices ?? []).includes(value as string) ? undefined : INVALID;
    case 'reference':
      return known(spec, value, refs, options.forAction) ? undefined : INVALID;
    case 'text':
      return textProblem(value);
    case 'tags':
      return tagProblem(value);
    default:
      return customProblem(value);
  }
}
