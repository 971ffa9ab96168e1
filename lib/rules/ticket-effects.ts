import type { AccountConfig } from '#lib/accounts/types.ts';
import { replyMail } from '#lib/email/reply.ts';
import { applyChange, type ResolvedChanges } from '#lib/tickets/apply-change.ts';
import { withLostBreaches } from '#lib/tickets/breaches.ts';
import { type Message, nextMessagePlace } from '#lib/tickets/messages/message.ts';
import { settledAfter } from '#lib/tickets/messages/ticket-after.ts';
import type { UpdateTicketInput } from '#lib/tickets/schemas.ts';
import type { ClockState } from '#lib/tickets/sla-clocks.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp, parseTimestamp, type Timestamp } from '#lib/time.ts';
import type { Evaluation, RuleRef } from './evaluate.ts';

/**
 * What a change's rules leave, as the change commits it (docs/rules.md, "In the change's transaction"): the
 * fields they set applied as a PATCH applies them (status times, SLA targets, updated_at: applyChange), their notes
 * and replies as messages of the ticket (numbered after the change's own, the conversation's fields and clocks
 * moved as any message moves them, a reply e-mailed as an agent's), and what the change's events say of them.
 */

export interface RuleEffects {
  /** The ticket after the change and every effect of its rules. */
  ticket: Ticket;
  /** The notes and replies the rules wrote, in order. */
  messages: Message[];
  /** The breaches the rules' effects would lose (written in the commit: lib/tickets/breaches.ts). */
  clocks: ClockState[];
  /** What every event of the change adds to its `data` (none when no rule fired, stopped or was skipped). */
  extra: Record<string, unknown> | undefined;
  fired: RuleRef[];
}

const HOUR_US = 3_600_000_000;

/** Rule replies on the ticket in the hour before `nowUs` (the loop guard's count: 3 an hour). */
export function ruleRepliesLastHour(ticket: Ticket, nowUs: number): number {
  return repliesOfLastHour(ticket, nowUs).length;
}

const repliesOfLastHour = (ticket: Ticket, nowUs: number) =>
  (ticket.ruleRepliesAt ?? []).filter((at) => parseTimestamp(at) > nowUs - HOUR_US);

export function ruleEffects(
  config: AccountConfig,
  after: Ticket,
  evaluation: Evaluation,
  nowUs: number,
): RuleEffects {
  const { fired, stopped, skipped } = evaluation;
  const extra =
    fired.length > 0 || stopped || skipped.length > 0
      ? {
          rules: fired.map(({ id, version }) => ({ id, version })),
          ...(stopped ? { rules_stopped: true } : {}),
          ...(skipped.length > 0 ? { rules_skipped: skipped } : {}),
        }
      : undefined;
  if (evaluation.changes.length === 0 && evaluation.messages.length === 0) {
    return { ticket: after, messages: [], clocks: [], extra, fired };
  }
  const { input, changes } = asPatch(config, evaluation);
  const fields = applyChange(after, input, changes, config, nowUs);
  const settled = withLostBreaches(after, fields, nowUs);
  let ticket = settled.ticket;
  const clocks = [...settled.clocks];
  const messages: Message[] = [];
  for (const written of evaluation.messages) {
    const message = ruleMessage(config, ticket, written, nowUs);
    const next = settledAfter(ticket, message, undefined, config, false);
    ticket = next.ticket;
    clocks.push(...next.clocks);
    messages.push(message.message);
  }
  // A rule's replies count toward the loop guard; a macro's (ruleId null: an agent's act) do not.
  const replies = messages
    .filter((m, i) => m.visibility === 'public' && evaluation.messages[i]?.ruleId !== null)
    .map((m) => m.createdAt);
  if (replies.length > 0) ticket = { ...ticket, ruleRepliesAt: recentReplies(ticket, replies, nowUs) };
  return { ticket, messages, clocks, extra, fired };
}

/** The rules' field changes as a PATCH's input and resolved references (the evaluator resolved them already). */
function asPatch(config: AccountConfig, evaluation: Evaluation) {
  const input: UpdateTicketInput = {};
  const changes: ResolvedChanges = {};
  const result = evaluation.ticket;
  for (const { field, to } of evaluation.changes) {
    if (field === 'status') input.status = result.status;
    else if (field === 'priority') input.priority = result.priority;
    else if (field === 'tags') input.tags = result.tags;
    else if (field === 'team_id') changes.team = result.team;
    else if (field === 'assignee_id') changes.assignee = result.assignee;
    else if (field === 'organization_id') changes.organization = result.organization ?? null;
    else if (field === 'category') {
      changes.category = config.categories.find((c) => c.slug === result.category?.slug) ?? null;
    } else if (field.startsWith('custom_fields.')) {
      input.custom_fields = { ...input.custom_fields, [field.slice('custom_fields.'.length)]: to as never };
    }
  }
  return { input, changes };
}

/** A rule's note or reply as a message after the ticket's last (an agent's when it names one, else the system's). */
function ruleMessage(
  config: AccountConfig,
  ticket: Ticket,
  written: Evaluation['messages'][number],
  nowUs: number,
): { message: Message; createdUs: number } {
  const { number, id, createdUs } = nextMessagePlace(ticket, nowUs);
  const agent = written.agentId === null ? undefined : config.agents.find((a) => a.id === written.agentId);
  const reply = written.type === 'reply';
  const message: Message = {
    id,
    number,
    ticketUuid: ticket.uuid,
    author: agent
      ? { type: 'agent', agentId: agent.id, name: agent.name, email: agent.email }
      : { type: 'system', agentId: null, name: null, email: null },
    visibility: reply ? 'public' : 'internal',
    channel: 'api',
    body: written.body,
    createdAt: formatTimestamp(createdUs),
    ...(reply ? replyMail(config, ticket, id) : {}),
  };
  return { message, createdUs };
}

/** The rule replies of the last hour with this change's: what the next change's loop guard counts. */
function recentReplies(ticket: Ticket, replies: Timestamp[], nowUs: number): Timestamp[] {
  return [...repliesOfLastHour(ticket, nowUs), ...replies];
}
