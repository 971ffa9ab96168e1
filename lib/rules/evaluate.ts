import type { Ticket } from '#lib/tickets/types.ts';
import {
  type ActionEnv,
  applyAction,
  type Directory,
  type PendingMessage,
  type SkipReason,
} from './actions.ts';
import { type ConditionInput, firstFailure, matchedConditions, type PlacedCondition } from './conditions.ts';
import { type FieldChange, fieldChanges, renderMessages, type WrittenMessage } from './effects.ts';
import type { ChangeFacts, FieldValue } from './fields.ts';
import { byPosition, RULE_LIMITS, type Rule, type RuleKind, type Via } from './types.ts';

/**
 * The one evaluator of rules (decisions.md, "Business rules"; docs/rules.md): the real change, `rules/test` and a
 * macro's dry run all call it, so a test cannot disagree with what a change then does. Pure and deterministic:
 * the ticket, the change's facts, the rules and the account's entities in; the ticket after, what fired and why
 * the others did not out. No clock is read (the change's time is an input) and nothing is written.
 *
 * Order: the rules of the change's kind by `position` (ties by id); at each step the first rule, in that order,
 * that has not fired in this change and whose conditions hold on the ticket as the rules before left it fires.
 * So a rule fires at most once per change, sees the effects of those that fired before it, and a rule passed
 * over is looked at again after every firing (order cannot silently stop a chain), until none holds. At most 10
 * fire: an 11th that would is not run and `stopped` says so.
 */

export type ChangeKind = 'create' | 'update' | 'message' | 'macro' | 'time';

/** The rule kinds a change runs, in order: a time rule's change is then an update like any other. */
const PHASES: Record<ChangeKind, RuleKind[]> = {
  create: ['created'],
  update: ['updated'],
  message: ['message'],
  macro: ['updated'],
  time: ['time', 'updated'],
};

export interface ChangeContext {
  kind: ChangeKind;
  /** How the change came: the API or mail (a macro's `via` is `macro`, a time rule's `rule`, whatever this says). */
  channel: 'api' | 'email';
  /** The change is automatic mail (an auto-reply, a bounce): no rule replies to it. */
  automatic: boolean;
  /** An import's change: no rule runs. */
  imported: boolean;
  /** A message change's message (`message.*` conditions). */
  message?: ChangeFacts['message'];
  /** Rule replies on this ticket in the hour before the change (at most 3 an hour). */
  ruleRepliesLastHour: number;
  /** The change's time, epoch microseconds. */
  nowUs: number;
}

export interface RuleChange {
  /** The ticket before the change; null: the change creates it. */
  before: Ticket | null;
  /** The ticket after the change itself, before its rules. */
  after: Ticket;
  context: ChangeContext;
  /**
   * The account's rules: the active ones of the change's kinds are run in order. For a time change, the time rules
   * due on the ticket at the moment (time-rules.ts, dueTimeRules) and the `updated` rules.
   */
  rules: readonly Rule[];
  directory: Directory;
}

export interface RuleRef {
  id: number;
  version: number;
  name: string;
}

/** Each rule looked at, for `rules/test`: why it fired or, from the same run, why not. */
export type RuleOutcome =
  | { rule: RuleRef; fired: true; matched: PlacedCondition[] }
  | { rule: RuleRef; fired: false; reason: 'conditions'; failed: PlacedCondition & { actual: FieldValue } }
  | { rule: RuleRef; fired: false; reason: 'stopped' | 'skipped' };

export interface Evaluation {
  /** The ticket after the change and every effect of its rules. */
  ticket: Ticket;
  /** The rules that fired, in order (the change's events' `data.rules`). */
  fired: RuleRef[];
  /** The cap stopped a rule that would have fired (`data.rules_stopped`). */
  stopped: boolean;
  /** Actions not applied, with why (`data.rules_skipped`): a reply to automatic mail, past 3 an hour... */
  skipped: { id: number; reason: SkipReason }[];
  messages: WrittenMessage[];
  /** The fields the rules changed (from the ticket after the change itself). */
  changes: FieldChange[];
  outcomes: RuleOutcome[];
}

const refOf = (rule: Rule): RuleRef => ({ id: rule.id, version: rule.version, name: rule.name });

const viaOf = (context: ChangeContext): Via =>
  context.kind === 'macro' ? 'macro' : context.kind === 'time' ? 'rule' : context.channel;

export function evaluateRules(change: RuleChange): Evaluation {
  const { context } = change;
  if (context.imported) return { ...nothingFired(change.after), outcomes: [] };
  const facts: ChangeFacts = {
    via: viaOf(context),
    ...(context.message ? { message: context.message } : {}),
  };
  const looked = (ticket: Ticket): ConditionInput => ({ now: ticket, before: change.before, facts });
  let replies = context.ruleRepliesLastHour;
  const env: ActionEnv = {
    directory: change.directory,
    nowUs: context.nowUs,
    replyRefused: () => {
      if (context.automatic) return 'automatic_mail';
      if (replies >= RULE_LIMITS.repliesPerHour) return 'replies_per_hour';
      replies += 1;
      return null;
    },
  };
  const rules = PHASES[context.kind].flatMap((kind) =>
    change.rules.filter((rule) => rule.active && rule.on === kind).sort(byPosition),
  );
  let ticket = change.after;
  let stopped = false;
  const done = new Map<number, PlacedCondition[] | 'skipped'>();
  const fired: RuleRef[] = [];
  const skipped: Evaluation['skipped'] = [];
  const pending: (PendingMessage & { ruleId: number })[] = [];
  for (const kind of PHASES[context.kind]) {
    for (;;) {
      const next = rules.find(
        (rule) =>
          rule.on === kind && !done.has(rule.id) && firstFailure(rule.conditions, looked(ticket)) === null,
      );
      if (!next) break;
      if (fired.length >= RULE_LIMITS.firedPerChange) {
        stopped = true;
        break;
      }
      const matched = matchedConditions(next.conditions, looked(ticket));
      let applied = false;
      for (const action of next.actions) {
        const result = applyAction(ticket, action, env);
        ticket = result.ticket;
        if (result.skipped) skipped.push({ id: next.id, reason: result.skipped });
        else applied = true;
        if (result.message) pending.push({ ...result.message, ruleId: next.id });
      }
      done.set(next.id, applied ? matched : 'skipped');
      if (applied) fired.push(refOf(next));
    }
  }
  const outcomes = rules.map((rule): RuleOutcome => {
    const seen = done.get(rule.id);
    if (seen === 'skipped') return { rule: refOf(rule), fired: false, reason: 'skipped' };
    if (seen) return { rule: refOf(rule), fired: true, matched: seen };
    const failed = firstFailure(rule.conditions, looked(ticket));
    return failed
      ? { rule: refOf(rule), fired: false, reason: 'conditions', failed }
      : { rule: refOf(rule), fired: false, reason: 'stopped' };
  });
  return {
    ticket,
    fired,
    stopped,
    skipped,
    messages: renderMessages(pending, ticket, change.directory),
    changes: fieldChanges(change.after, ticket),
    outcomes,
  };
}

function nothingFired(ticket: Ticket): Omit<Evaluation, 'outcomes'> {
  return { ticket, fired: [], stopped: false, skipped: [], messages: [], changes: [] };
}
