import * as v from 'valibot';
import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import { ValidationFailed } from '#lib/errors.ts';
import { optionalInteger } from '#lib/number-fields.ts';
import { sometimes } from '#lib/validation/patch-fields.ts';
import { oneOf, requiredText } from '#lib/validation.ts';
import { presentCreatedTicket } from '../present.ts';
import { TICKET_STATUSES, type Ticket } from '../types.ts';
import {
  MAX_MESSAGE_BODY,
  MESSAGE_AUTHORS,
  MESSAGE_VISIBILITIES,
  type Message,
  presentMessage,
} from './message.ts';

/**
 * What a message post takes and refuses: the `createMessage` route's body, the combinations and sizes it refuses,
 * and the agent an agent's message is written by.
 */

/** The `createMessage` route's body (decisions.md, "Conversations"). */
export const CreateMessageSchema = v.object({
  body: requiredText('body', MAX_MESSAGE_BODY),
  visibility: oneOf('visibility', MESSAGE_VISIBILITIES),
  author: oneOf('author', MESSAGE_AUTHORS),
  agent_id: optionalInteger('agent_id'),
  status: sometimes(
    v.pipe(v.unknown(), v.picklist(TICKET_STATUSES, 'The selected status is invalid.')),
    v.picklist(TICKET_STATUSES),
  ),
});
export type CreateMessageInput = v.InferOutput<typeof CreateMessageSchema>;

/** A lone surrogate (invalid UTF-16): stored, it would come back as U+FFFD, so it is refused. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The answer (message and ticket) is kept whole with an Idempotency-Key in one item of at most 400 KB: a body
 * of 65,536 characters is at most 192 KB of UTF-8 (3 bytes per UTF-16 unit), which fits beside any ticket of
 * up to ~187 KB; beside a larger ticket (a long description and many long custom fields) the message is refused
 * rather than stored without its answer (docs/decisions.md, "Message size").
 */
export const MAX_MESSAGE_ANSWER_BYTES = 380 * 1024;

export function refuseOversizedAnswer(message: Message, ticket: Ticket): void {
  const bytes =
    Buffer.byteLength(JSON.stringify(presentMessage(message)), 'utf8') +
    Buffer.byteLength(JSON.stringify(presentCreatedTicket(ticket)), 'utf8');
  if (bytes > MAX_MESSAGE_ANSWER_BYTES) {
    throw ValidationFailed.field(
      'body',
      'The message is too large for this ticket: the message and the ticket together must not exceed 380 KB.',
    );
  }
}

export function refuseCombinations(input: CreateMessageInput, author: string, visibility: string): void {
  if (LONE_SURROGATE.test(input.body)) {
    throw ValidationFailed.field(
      'body',
      'The body field must be valid Unicode text (it holds a lone surrogate).',
    );
  }
  if (visibility === 'internal' && input.status !== undefined) {
    throw ValidationFailed.field('status', 'An internal note changes no status: set the status with PATCH.');
  }
  if (author !== 'requester') return;
  if (visibility === 'internal') {
    throw ValidationFailed.field('visibility', 'A requester cannot write an internal note.');
  }
  if (input.agent_id !== undefined) {
    throw ValidationFailed.field('agent_id', 'The agent id field is prohibited when author is requester.');
  }
  if (input.status !== undefined) {
    throw ValidationFailed.field('status', 'The status field is prohibited when author is requester.');
  }
}

const activeAgent = (config: AccountConfig, id: number) => config.agents.find((a) => a.id === id && a.active);

/** The agent a message names (`agent_id`), when it names one: an active agent of the account, else a 422. */
export function namedAgent(config: AccountConfig, agentId: number | undefined): Agent | undefined {
  const agent = agentId === undefined ? undefined : activeAgent(config, agentId);
  if (agentId !== undefined && !agent) {
    throw ValidationFailed.field('agent_id', 'The selected agent id is invalid.');
  }
  return agent;
}

/** The default author of an agent's message: the ticket's assignee, when still an active agent. */
export function assigneeAgent(config: AccountConfig, ticket: Ticket) {
  const agent = ticket.assignee ? activeAgent(config, ticket.assignee.id) : undefined;
  if (!agent) {
    throw ValidationFailed.field(
      'agent_id',
      'The agent id field is required when the ticket has no active assignee.',
    );
  }
  return agent;
}
