import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig } from '#lib/accounts/types.ts';
import type { EventDraft } from '#lib/data/events.ts';
import { firingPuts } from '#lib/data/rules/firings.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { messagePut } from '#lib/data/tickets/messages.ts';
import type { BusyCondition } from '#lib/data/tickets/tickets.ts';
import { threadedInCommit } from '#lib/email/threading.ts';
import { createdEvent } from '#lib/events/drafts.ts';
import type { OpenWork } from '#lib/tickets/assignment.ts';
import { isQueuedMail, type Message, presentMessage } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp, nowMillis } from '#lib/time.ts';
import { getActiveRules } from './cache.ts';
import type { ChangeContext } from './evaluate.ts';
import { runRules } from './run.ts';
import { type RuleEffects, ruleEffects, ruleRepliesLastHour } from './ticket-effects.ts';
import { nextRuleMoment } from './time-rules.ts';
import type { Rule } from './types.ts';

/**
 * The rules of a ticket change, as its commit needs them (decisions.md, "Business rules": "inside the change's own
 * transaction"; docs/rules.md): a create, a PATCH and a message call `changeRules` on the ticket their change
 * leaves, then write `ruleCommit`'s items and events in the same transaction as the change. So a change and every
 * effect of its rules commit together or not at all, and a retry of the change (a lost race, a keyed retry) runs
 * them again on the ticket as it then is.
 */

export interface ChangeRules {
  accountId: string;
  config: AccountConfig;
  /** The account's active rules (the rules cache's). */
  rules: readonly Rule[];
  /** A time change's due time rules (time-rules.ts, dueTimeRules): run before the `updated` rules. */
  due?: readonly Rule[] | undefined;
  /** The ticket before the change (null: the change creates it) and after the change itself. */
  before: Ticket | null;
  after: Ticket;
  context: Pick<ChangeContext, 'kind' | 'channel' | 'automatic' | 'message' | 'nowUs'>;
  busy?: OpenWork | undefined;
}

export interface RulesApplied extends RuleEffects {
  /** The condition on the agent the rules' `"auto"` chose, for the commit (undefined: none). */
  picked: BusyCondition | undefined;
  /** The change's time: its rules' firings are counted at it. */
  atUs: number;
}

/**
 * The change's rules run, and the ticket it leaves with its next time-rule moment (`ruleDueAt`, its due entry):
 * every change asks again, since a change may move a rule's `since` or make its conditions hold.
 */
export async function changeRules(change: ChangeRules): Promise<RulesApplied> {
  const { after, context } = change;
  const run =
    context.kind === 'time'
      ? [...(change.due ?? []), ...change.rules.filter((rule) => rule.on === 'updated')]
      : change.rules.filter((rule) => kindsOf(context.kind).includes(rule.on));
  const nothing = { messages: [], clocks: [], extra: undefined, fired: [], picked: undefined };
  const applied =
    run.length === 0 ? { ticket: after, ...nothing } : await evaluated({ ...change, rules: run });
  const ticket = withNextMoment(applied.ticket, change.rules, change.config);
  return { ...applied, ticket, atUs: context.nowUs };
}

async function evaluated(change: ChangeRules) {
  const { after, context } = change;
  const { evaluation, picked } = await runRules({
    ...change,
    context: { ...context, imported: false, ruleRepliesLastHour: ruleRepliesLastHour(after, context.nowUs) },
  });
  return { ...ruleEffects(change.config, after, evaluation, context.nowUs), picked };
}

const kindsOf = (kind: ChangeContext['kind']): string[] =>
  kind === 'create' ? ['created'] : kind === 'message' ? ['message'] : ['updated'];

/** The ticket with its next time-rule moment over the account's time rules (none: null, or absent as it was). */
export function withNextMoment(ticket: Ticket, rules: readonly Rule[], config: AccountConfig): Ticket {
  const timeRules = rules.filter((rule) => rule.on === 'time');
  if (timeRules.length === 0 && ticket.ruleDueAt == null) return ticket;
  const looked = ticket.ruleCycles ?? {};
  const next = nextRuleMoment(ticket, timeRules, { calendar: config.account.businessHours ?? null, looked });
  const ruleDueAt = next ? formatTimestamp(next.atUs) : null;
  return ruleDueAt === (ticket.ruleDueAt ?? null) ? ticket : { ...ticket, ruleDueAt };
}

/**
 * withNextMoment for a writer of tickets outside the rules' own changes (the queue's hand-over, a hand-back, an
 * organization's clearing, a restore, an erasure's rewrite: docs/rules.md, "Who keeps the moment"): the account's
 * rules from the rules cache (no round trip while it is warm; outside a request its RULES_FRESH_SECONDS check) and
 * the configuration the writer read (none given: the cached one, whose calendar only `apply` changes). The writer
 * gives the ticket its change leaves to the function and writes the answer in the same commit as the change.
 */
export async function momentKeeper(
  accountId: string,
  config?: AccountConfig | undefined,
): Promise<(ticket: Ticket) => Ticket> {
  const [rules, read] = await Promise.all([
    getActiveRules(accountId),
    config ?? getCachedAccountConfig(accountId),
  ]);
  return (ticket) => (read ? withNextMoment(ticket, rules, read) : ticket);
}

/** The rules' messages with their mails' In-Reply-To (after the change's own `earlier` messages of the commit). */
export async function threadRuleMessages(
  accountId: string,
  ticket: Ticket,
  applied: RulesApplied,
  earlier: Message[] = [],
): Promise<RulesApplied> {
  if (!applied.messages.some(isQueuedMail)) return applied;
  const all = await threadedInCommit(accountId, ticket, [...earlier, ...applied.messages], isQueuedMail);
  return { ...applied, messages: all.slice(earlier.length) };
}

/**
 * The items the rules add to the change's commit: their messages (a reply in the outbox from the commit on) and a
 * firing of each rule that fired (its `fired` counts: lib/data/rules/firings.ts).
 */
export function ruleItems(accountId: string, applied: RulesApplied): CommitAction[] {
  return [
    ...applied.messages.map((m) =>
      messagePut(accountId, { ...m }, isQueuedMail(m) ? nowMillis() : undefined),
    ),
    ...firingPuts(accountId, applied.fired, applied.atUs, applied.ticket.uuid),
  ];
}

/**
 * The change's events with what its rules say (`data.rules`, `rules_stopped`, `rules_skipped` on its ticket and
 * message events), then a `message.created` for each note and reply the rules wrote.
 */
export function withRuleEvents(events: EventDraft[], applied: RulesApplied): EventDraft[] {
  const { extra } = applied;
  const said = (event: EventDraft): EventDraft =>
    extra && /^(ticket\.(created|updated)|message\.created)$/.test(event.type)
      ? { ...event, extra: { ...event.extra, ...extra } }
      : event;
  return [
    ...events.map(said),
    ...applied.messages.map((m) => said(createdEvent('message', presentMessage(m)))),
  ];
}
