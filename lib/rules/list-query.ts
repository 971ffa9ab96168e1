import * as v from 'valibot';
import { param, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { parseInput } from '#lib/validation.ts';

/**
 * The list queries of rules and macros (decisions.md: lists `{"data", "next_cursor"}` with `after`/`limit`).
 * Rules are listed in the evaluator's order, by position then id, so a rule's place is both: the cursor is
 * `<position>.<id>` of the last one shown. Macros are listed by id.
 */
export const DEFAULT_RULE_LIMIT = 50;
export const MAX_RULE_LIMIT = 100;

const CURSOR = /^(\d{1,16})\.(\d{1,15})$/;

const limit = param('limit', wholeNumber('limit', 1, MAX_RULE_LIMIT), wholeNumberWire(1, MAX_RULE_LIMIT));

export const RuleListQueryParams = v.object({
  after: param(
    'after',
    v.pipe(v.string(), v.regex(CURSOR, 'The after field must be a next_cursor this list gave.')),
    v.pipe(
      v.string(),
      v.maxLength(32),
      v.regex(CURSOR),
      v.description("A `next_cursor` of this list: the last rule's position and id (`3.17`)."),
    ),
  ),
  limit,
});

export const MacroListQueryParams = v.object({
  after: param('after', wholeNumber('after', 0), wholeNumberWire(0)),
  limit,
});

/** Where a rules page starts: after this position and id (none: from the first). */
export interface RuleCursor {
  position: number;
  id: number;
}

export function parseRuleListQuery(query: Record<string, string[]>) {
  const q = parseInput(RuleListQueryParams, query);
  const match = q.after === undefined ? null : CURSOR.exec(q.after);
  const after: RuleCursor | undefined = match
    ? { position: Number(match[1]), id: Number(match[2]) }
    : undefined;
  return { after, limit: q.limit ?? DEFAULT_RULE_LIMIT };
}

export function parseMacroListQuery(query: Record<string, string[]>) {
  const q = parseInput(MacroListQueryParams, query);
  return { after: q.after ?? 0, limit: q.limit ?? DEFAULT_RULE_LIMIT };
}

/** What names a rule or a macro in a path: its id, digits only (anything else names nothing: 404). */
export const pathId = (ref: string): number | undefined =>
  /^[1-9]\d{0,14}$/.test(ref) ? Number(ref) : undefined;
