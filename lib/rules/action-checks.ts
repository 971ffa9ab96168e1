import { MAX_MESSAGE_BODY } from '#lib/tickets/messages/message.ts';
import { settableField } from './fields.ts';
import { unknownPlaceholders } from './placeholders.ts';
import type { RuleReferences } from './references.ts';
import type { ActionType } from './types.ts';
import { type Problem, scalarProblem, tagProblem } from './value-checks.ts';

/**
 * A rule's or macro's actions checked against the catalogue and the account (decisions.md, "Business rules":
 * `actions.N.…`, an unknown team, agent or placeholder too), once their shapes passed (schemas.ts).
 */

/** An action as its shape leaves it: the type known, the rest still as sent. */
export interface ShapedAction {
  type: ActionType;
  field?: unknown;
  value?: unknown;
  tags?: unknown;
  body?: unknown;
  agent_id?: unknown;
}

export const MAX_ACTION_TAGS = 50;

export function actionProblems(actions: ShapedAction[], refs: RuleReferences): Problem[] {
  return actions.flatMap((action, index) =>
    problemsOf(action, refs).map((p) => ({ path: ['actions', index, ...p.path], message: p.message })),
  );
}

function problemsOf(action: ShapedAction, refs: RuleReferences): Problem[] {
  switch (action.type) {
    case 'set':
      return setProblems(action, refs);
    case 'add_tags':
    case 'remove_tags':
      return tagsProblems(action.tags);
    default:
      return messageProblems(action, refs);
  }
}

function setProblems(action: ShapedAction, refs: RuleReferences): Problem[] {
  const { field, value } = action;
  if (field === undefined || field === null || field === '') {
    return [{ path: ['field'], message: 'The field field is required.' }];
  }
  const spec = typeof field === 'string' ? settableField(field) : undefined;
  if (!spec) return [{ path: ['field'], message: 'The selected field is invalid.' }];
  if (field === 'assignee_id' && value === 'auto') return [];
  const problem = scalarProblem(spec, value, refs, { nullable: true, forAction: true });
  return problem ? [{ path: ['value'], message: problem }] : [];
}

function tagsProblems(tags: unknown): Problem[] {
  if (tags === undefined || tags === null)
    return [{ path: ['tags'], message: 'The tags field is required.' }];
  if (!Array.isArray(tags))
    return [{ path: ['tags'], message: 'The tags field must be an array of strings.' }];
  if (tags.length === 0) return [{ path: ['tags'], message: 'The tags field is required.' }];
  if (tags.length > MAX_ACTION_TAGS) {
    return [{ path: ['tags'], message: `The tags field must not have more than ${MAX_ACTION_TAGS} items.` }];
  }
  return tags.flatMap((tag, index) => {
    const problem = tagProblem(tag);
    return problem ? [{ path: ['tags', index], message: problem }] : [];
  });
}

function messageProblems(action: ShapedAction, refs: RuleReferences): Problem[] {
  const problems: Problem[] = [];
  const { body, agent_id: agentId } = action;
  if (typeof body !== 'string' && body !== undefined && body !== null) {
    problems.push({ path: ['body'], message: 'The body field must be a string.' });
  } else if (typeof body !== 'string' || body.trim() === '') {
    problems.push({ path: ['body'], message: 'The body field is required.' });
  } else if (body.length > MAX_MESSAGE_BODY) {
    problems.push({
      path: ['body'],
      message: `The body field must not be greater than ${MAX_MESSAGE_BODY} characters.`,
    });
  } else {
    for (const name of unknownPlaceholders(body)) {
      problems.push({ path: ['body'], message: `The body field names an unknown placeholder {{${name}}}.` });
    }
  }
  const known = Number.isSafeInteger(agentId) && refs.activeAgentIds.has(agentId as number);
  if (agentId !== undefined && agentId !== null && !known) {
    problems.push({ path: ['agent_id'], message: 'The selected agent id is invalid.' });
  }
  return problems;
}
