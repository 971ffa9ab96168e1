import type { Ticket } from '#lib/tickets/types.ts';
import { applyAction, type Directory, type PendingMessage, type SkipReason } from './actions.ts';
import { type FieldChange, fieldChanges, renderMessages, type WrittenMessage } from './effects.ts';
import { type ChangeContext, type Evaluation, evaluateRules } from './evaluate.ts';
import type { Macro, Rule } from './types.ts';

/**
 * Applying a macro (decisions.md, "Business rules": `POST /api/tickets/{ticket}/macros/{macro}`), pure: its
 * actions in order, as rules apply theirs (actions.ts), then the account's `updated` rules as after any change
 * (`via: macro`), through the one evaluator. A dry run is this call and nothing written; the real one writes what
 * it answers in the ticket's change. A macro is an agent's act, not a rule's: its replies are not held to the
 * rules' loop guards (3 an hour, never to automatic mail) and do not count toward them.
 */

export interface MacroApplication {
  /** The ticket after the macro and the rules it set off. */
  ticket: Ticket;
  /** Every field changed, the macro's and its rules', from the ticket as it was. */
  changes: FieldChange[];
  /** The macro's notes and replies (ruleId null), then its rules'. */
  messages: WrittenMessage[];
  /** The macro's actions that could not apply (an agent deactivated since, a closed ticket), by index. */
  skipped: { action: number; reason: SkipReason }[];
  /** What its `updated` rules did (fired, stopped, skipped, outcomes). */
  rules: Evaluation;
}

export interface MacroChange {
  ticket: Ticket;
  macro: Pick<Macro, 'actions'>;
  /** The change's facts (its kind is `macro`): the time, the rule replies of the last hour. */
  context: Omit<ChangeContext, 'kind' | 'message'>;
  rules: readonly Rule[];
  directory: Directory;
}

export function applyMacro(change: MacroChange): MacroApplication {
  const env = { directory: change.directory, nowUs: change.context.nowUs, replyRefused: () => null };
  let after = change.ticket;
  const pending: PendingMessage[] = [];
  const skipped: MacroApplication['skipped'] = [];
  for (const [index, action] of change.macro.actions.entries()) {
    const result = applyAction(after, action, env);
    after = result.ticket;
    if (result.skipped) skipped.push({ action: index, reason: result.skipped });
    if (result.message) pending.push(result.message);
  }
  const rules = evaluateRules({
    before: change.ticket,
    after,
    context: { ...change.context, kind: 'macro' },
    rules: change.rules,
    directory: change.directory,
  });
  const own = renderMessages(
    pending.map((message) => ({ ...message, ruleId: null })),
    rules.ticket,
    change.directory,
  );
  return {
    ticket: rules.ticket,
    changes: fieldChanges(change.ticket, rules.ticket),
    messages: [...own, ...rules.messages],
    skipped,
    rules,
  };
}
