import type { AccountConfig } from '#lib/accounts/types.ts';
import { peekCursor } from '#lib/data/tickets/sequences.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { Evaluation } from './evaluate.ts';
import type { RulesApplied } from './in-change.ts';
import { applyMacro, type MacroApplication } from './macros.ts';
import { withDirectory } from './run.ts';
import { ruleEffects, ruleRepliesLastHour } from './ticket-effects.ts';
import type { Macro, Rule } from './types.ts';

/**
 * A macro applied to a ticket as its change commits it (decisions.md, "Business rules"; docs/rules.md, "Macros
 * applied"): the pure application (./macros.ts: its actions, then the `updated` rules with `via: macro`) run over
 * the directory as a change's rules are (./run.ts, withDirectory), then its effects as a change's rules' are
 * (./ticket-effects.ts): every field it and its rules set applied as a PATCH applies them to the ticket as it was,
 * their notes and replies as messages. So the commit writes it as it writes any change's rules (ruleItems,
 * withRuleEvents), and a dry run answers the same thing, computed the same way, and writes nothing.
 */

export interface MacroApplied {
  /** What the commit writes: the ticket after the macro and its rules, their messages, the rules' firings. */
  applied: RulesApplied;
  /** What the dry run shows besides: the changes, the rules looked at, the macro's skipped actions. */
  application: MacroApplication;
}

export interface MacroRun {
  accountId: string;
  config: AccountConfig;
  rules: readonly Rule[];
  macro: Pick<Macro, 'actions'>;
  before: Ticket;
  nowUs: number;
  /** Nothing is written: a round-robin cursor is read as the next take would answer it, not taken. */
  dryRun: boolean;
}

export async function macroChange(run: MacroRun): Promise<MacroApplied> {
  const { before, nowUs } = run;
  const context = {
    channel: 'api' as const,
    automatic: false,
    imported: false,
    ruleRepliesLastHour: ruleRepliesLastHour(before, nowUs),
    nowUs,
  };
  const { result: application, picked } = await withDirectory(
    { accountId: run.accountId, config: run.config, nowUs, cursor: run.dryRun ? peekCursor : undefined },
    (directory) => applyMacro({ ticket: before, macro: run.macro, context, rules: run.rules, directory }),
    (done) => done.ticket.assignee?.id,
  );
  // The macro's and its rules' work as one evaluation from the ticket as it was: its fields, its messages (the
  // macro's first), what its rules say on the change's events.
  const whole: Evaluation = {
    ...application.rules,
    ticket: application.ticket,
    changes: application.changes,
    messages: application.messages,
  };
  const effects = ruleEffects(run.config, before, whole, nowUs);
  return { application, applied: { ...effects, picked, atUs: nowUs } };
}
