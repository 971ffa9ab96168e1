import { forgetAccountConfig, getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Contact } from '#lib/accounts/types.ts';
import { findContactByEmail } from '#lib/data/contacts/contacts.ts';
import type { EventDraft } from '#lib/data/events.ts';
import { dropPending } from '#lib/data/index/pending.ts';
import { TeamGone } from '#lib/data/people/people.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { ConcurrentWrite, retryOnConflict } from '#lib/data/store/errors.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { type TicketReservation, takeCursor } from '#lib/data/tickets/sequences.ts';
import {
  type BusyCondition,
  getAgentOpenWork,
  getOpenWork,
  insertTicket,
  reserveTicketNumber,
} from '#lib/data/tickets/tickets.ts';
import { Conflict, NotFound } from '#lib/errors.ts';
import { createdEvent } from '#lib/events/drafts.ts';
import { organizationOfAddress, organizationOfRequester } from '#lib/organizations/refs.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import { changeRules, ruleItems, threadRuleMessages, withRuleEvents } from '#lib/rules/in-change.ts';
import type { Rule } from '#lib/rules/types.ts';
import { parseInput } from '#lib/validation.ts';
import { candidateSetName, needsOpenWork, pickAssignee, pickCondition } from './assignment.ts';
import { composeTicket } from './compose-ticket.ts';
import { createDecisions, refuseOversizedTicket } from './create-decisions.ts';
import { presentCreatedTicket } from './present.ts';
import { type CreateTicketInput, CreateTicketSchema } from './schemas.ts';
import type { Ticket } from './types.ts';

/**
 * The `createTicket` route. Round trips once the account's configuration is cached: (1) the request's rate count
 * (the HTTP stack's), in parallel with the requester's contact (and the agents' open work, for least-busy or when a
 * candidate has a capacity); (2) the ticket number and, for round-robin, the candidate set's cursor, which wait for
 * the count; (3) one transaction writing the ticket, its postings, terms and counters. Every check that can reject
 * the request runs before (2), so a rejected request writes nothing. `attach` gives what to write with the commit
 * for the ticket about to be stored (the HTTP stack's kept answer of an Idempotency-Key).
 */
export async function createTicket(
  accountId: string,
  body: unknown,
  attach?: (ticket: Ticket) => CommitAttachment,
): Promise<Ticket> {
  const input = parseInput(CreateTicketSchema, body);
  return createTicketFrom(accountId, input, { attach });
}

/** What a create other than POST /api/tickets adds: a follow-up of a closed ticket (lib/tickets/messages/follow-up.ts). */
export interface CreateOptions {
  attach?: ((ticket: Ticket) => CommitAttachment) | undefined;
  /** The closed ticket a follow-up continues. */
  parentUuid?: string | undefined;
  /** Events written in the create's commit after its `ticket.created`. */
  moreEvents?: ((ticket: Ticket) => EventDraft[]) | undefined;
  /** The field a ticket too large for one item is refused on. */
  oversizedField?: string | undefined;
  /** A ticket opened by e-mail: its description's mail fields. */
  descriptionEmail?: Ticket['descriptionEmail'] | undefined;
  /** Items written in the create's commit (an e-mail's Message-ID claim). */
  moreItems?: ((ticket: Ticket) => CommitAction[]) | undefined;
}

/** A create of checked input: the `createTicket` route's, and a follow-up's (its input composed, not sent). */
export async function createTicketFrom(
  accountId: string,
  input: CreateTicketInput,
  options: CreateOptions = {},
): Promise<Ticket> {
  refuseOversizedTicket(input, options.oversizedField);
  // The requester's contact and its domain's organization, read beside the configuration (which waits for the
  // request's rate count); the contact's own organization, when it names one, beside the number.
  const requester = requesterOf(accountId, input.requester_email);
  requester.catch(() => undefined);
  // The account's rules too (the container's cache: no round trip while it is warm).
  const rules = getActiveRules(accountId);
  rules.catch(() => undefined);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const decided = { config, rules: await rules, ...createDecisions(config, input) };
  const { candidates, method } = decided;

  // createdUs: taken with the number (the ticket's uuid carries it, and its events' shard in the feed follows
  // from it); kept by a retry after a lost race (its place in every list stays).
  const [{ number, cursor, place, createdUs, pending }, [{ contact, organization }, busy]] =
    await reserveTicketNumber(
      accountId,
      method === 'round_robin' ? candidateSetName(candidates) : undefined,
      () =>
        Promise.all([
          requester,
          method && needsOpenWork(method, candidates) ? getOpenWork(accountId) : undefined,
        ]),
    );
  const taken = { number, place, createdUs, contact, organization, pending };
  return commitCreate(accountId, input, options, { ...decided, ...taken, cursor, busy }).catch(
    async (error: unknown) => {
      // A create that never wrote with its pending item (it failed before its commit) deletes it.
      await dropPending(pending);
      if (!(error instanceof TeamGone)) throw error;
      // Its category's default team deleted since the create read the configuration (the category routed
      // elsewhere first): decided again on the configuration as it is now, once, with the same number.
      const again = await decideAgain(accountId, input);
      return commitCreate(accountId, input, options, { ...again, ...taken }).catch((lost: unknown) => {
        if (lost instanceof TeamGone) throw new Conflict(TEAM_GONE);
        throw lost;
      });
    },
  );
}

/** The create's decisions, the number and what was read beside it: all its commit needs. */
type CreatePlan = ReturnType<typeof createDecisions> &
  Omit<TicketReservation, 'cursor'> & {
    config: AccountConfig;
    /** The account's active rules: the create's `created` rules run on the ticket it composes. */
    rules: readonly Rule[];
    contact: Contact | undefined;
    organization: OrganizationRef | null;
    /** The candidate set's round-robin cursor. */
    cursor: number | undefined;
    /** The agents' open work, when the method or a capacity needs it. */
    busy: Record<string, number> | undefined;
  };

/**
 * The decisions made again after a commit refused for a team gone: the cached configuration forgotten (inside a
 * request it is as new as the request's rate count, which came before the deletion), read again, and the
 * round-robin cursor and open work of the candidates as they now are.
 */
async function decideAgain(accountId: string, input: CreateTicketInput) {
  forgetAccountConfig(accountId);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const decided = { config, rules: await getActiveRules(accountId), ...createDecisions(config, input) };
  const { candidates, method } = decided;
  const [cursor, busy] = await Promise.all([
    method === 'round_robin' ? takeCursor(accountId, candidateSetName(candidates)) : 0,
    method && needsOpenWork(method, candidates) ? getOpenWork(accountId) : undefined,
  ]);
  return { ...decided, cursor, busy };
}

/** The ticket composed and committed; a lost race with a concurrent create decides the assignee again. */
async function commitCreate(
  accountId: string,
  input: CreateTicketInput,
  options: CreateOptions,
  plan: CreatePlan,
): Promise<Ticket> {
  const { attach } = options;
  const { candidates, method, cursor } = plan;
  let busy = plan.busy;
  let busyCondition: BusyCondition | undefined; // the last conditioned pick: a lost race reads its agent again
  let lostPick = false;
  return retryOnConflict(
    async () => {
      const assignee = method && pickAssignee(method, candidates, { cursor, busy, spread: lostPick });
      const picked = method && assignee && pickCondition(method, assignee, busy);
      const composed = composeTicket({ ...plan, account: plan.config.account, input, assignee });
      const ruled = await threadRuleMessages(
        accountId,
        composed,
        await changeRules({
          accountId,
          config: plan.config,
          rules: plan.rules,
          before: null,
          after: {
            ...composed,
            ...(options.parentUuid ? { parentUuid: options.parentUuid } : {}),
            ...(options.descriptionEmail ? { descriptionEmail: options.descriptionEmail } : {}),
          },
          context: { kind: 'create', channel: channelOf(input), automatic: false, nowUs: plan.createdUs },
          busy,
        }),
      );
      const ticket = ruled.ticket;
      // The commit checks the pick the ticket ends with: the create's own, or its rules' `"auto"`.
      busyCondition = ticket.assignee?.id === assignee?.id ? picked : ruled.picked;
      const [event, ...more] = withRuleEvents(
        [createdEvent('ticket', presentCreatedTicket(ticket)), ...(options.moreEvents?.(ticket) ?? [])],
        ruled,
      );
      await insertTicket({
        accountId,
        ticket,
        busyCondition,
        attachment: attach?.(ticket),
        event: event as EventDraft,
        moreEvents: more,
        moreItems: [...(options.moreItems?.(ticket) ?? []), ...ruleItems(accountId, ruled)],
        place: plan.place,
        pending: plan.pending,
      });
      return ticket;
    },
    {
      // Lost to a concurrent create (conflict, or least-busy no longer true): decide again, same number.
      retryable: (error) => error instanceof ConcurrentWrite,
      // A lost pick reads again only the agent it lost on (not every agent's cell: ~21 RCU at 1,000 agents); the
      // others' counts can only have grown since, which picking one finds the same way (docs/decisions.md).
      beforeRetry: async () => {
        const chosen = busyCondition?.chosen;
        if (!busy || chosen === undefined) return;
        busy = { ...busy, [chosen]: await getAgentOpenWork(accountId, chosen) };
        lostPick = true;
      },
    },
  );
}

const channelOf = (input: CreateTicketInput) => (input.channel === 'email' ? 'email' : 'api');

const TEAM_GONE =
  "The team of the ticket's category was deleted while the ticket was being created: send it again.";

/** The requester's contact and organization (organizationOfRequester), its domain's claim read beside the contact. */
async function requesterOf(accountId: string, email: string) {
  const byDomain = organizationOfAddress(accountId, email);
  // Settled here too: when the contact names its own organization, the domain's answer is not awaited.
  byDomain.catch(() => undefined);
  const contact = await findContactByEmail(accountId, email);
  return { contact, organization: await organizationOfRequester(accountId, contact, byDomain) };
}
