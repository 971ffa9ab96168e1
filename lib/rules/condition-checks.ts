import { conditionField, opsOf } from './fields.ts';
import type { RuleReferences } from './references.ts';
import { CHANGE_OPS, type ConditionOp, RULE_LIMITS, type RuleKind, VALUELESS_OPS } from './types.ts';
import { type Path, type Problem, scalarProblem, textProblem } from './value-checks.ts';

/**
 * A rule's conditions checked against the catalogue and the account (decisions.md, "Business rules": an unknown
 * field, op or value is a 422 on its path, `conditions.all.0.value`), once their shapes passed (schemas.ts).
 */

/** The most values an `in` or `not_in` lists. */
export const MAX_LISTED_VALUES = 100;

interface ShapedCondition {
  field: string;
  op: ConditionOp;
  value?: unknown;
}

export function conditionProblems(
  groups: { all: ShapedCondition[]; any: ShapedCondition[] },
  on: RuleKind,
  refs: RuleReferences,
): Problem[] {
  const problems: Problem[] = [];
  const count = groups.all.length + groups.any.length;
  if (count > RULE_LIMITS.conditions) {
    problems.push({
      path: ['conditions'],
      message: `The conditions field must not have more than ${RULE_LIMITS.conditions} items (all and any together).`,
    });
  }
  for (const group of ['all', 'any'] as const) {
    for (const [index, condition] of groups[group].entries()) {
      const problem = conditionProblem(condition, on, refs);
      if (problem)
        problems.push({ path: ['conditions', group, index, ...problem.path], message: problem.message });
    }
  }
  return problems;
}

/** The first problem of one condition (its field, then its op, then its value), or undefined. */
function conditionProblem(
  condition: ShapedCondition,
  on: RuleKind,
  refs: RuleReferences,
): Problem | undefined {
  const { field, op, value } = condition;
  const spec = conditionField(field);
  if (!spec) return { path: ['field'], message: 'The selected field is invalid.' };
  if (spec.only && spec.only !== on) {
    return { path: ['field'], message: `The ${field} field is read by ${spec.only} rules only.` };
  }
  if (!opsOf(spec).includes(op)) {
    return { path: ['op'], message: `The ${op} op does not apply to the ${field} field.` };
  }
  if (CHANGE_OPS.includes(op) && on !== 'updated') {
    return { path: ['op'], message: `The ${op} op is for updated rules only.` };
  }
  const problem = valueProblem(spec, op, value, refs);
  return problem && { path: ['value', ...problem.path], message: problem.message };
}

function valueProblem(
  spec: NonNullable<ReturnType<typeof conditionField>>,
  op: ConditionOp,
  value: unknown,
  refs: RuleReferences,
): { path: Path; message: string } | undefined {
  const at = (message: string | undefined, path: Path = []) => (message ? { path, message } : undefined);
  if (VALUELESS_OPS.includes(op)) {
    return at(value == null ? undefined : `The value field must be left out for the ${op} op.`);
  }
  if (op === 'contains' || op === 'not_contains') {
    return at(spec.kind === 'tags' ? scalarProblem(spec, value, refs, nullable(false)) : textProblem(value));
  }
  if (op !== 'in' && op !== 'not_in') return at(scalarProblem(spec, value, refs, nullable(true)));
  if (!Array.isArray(value) || value.length === 0) {
    return at(`The value field must be a list of 1 to ${MAX_LISTED_VALUES} values for the ${op} op.`);
  }
  if (value.length > MAX_LISTED_VALUES) {
    return at(`The value field must not have more than ${MAX_LISTED_VALUES} items.`);
  }
  for (const [index, item] of value.entries()) {
    const problem = scalarProblem(spec, item, refs, nullable(true));
    if (problem) return at(problem, [index]);
  }
  return undefined;
}

const nullable = (yes: boolean) => ({ nullable: yes, forAction: false });
