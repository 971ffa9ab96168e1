import type { AccountConfig, Category } from '#lib/accounts/types.ts';
import { ValidationFailed } from '#lib/errors.ts';
import { nowMicros } from '#lib/time.ts';
import { candidatesFor } from './assignment.ts';
import type { CreateTicketInput } from './schemas.ts';

/** What a create decides before it takes a number, and what it refuses then (create-ticket.ts). */

/**
 * What a create decides from the account's configuration alone, before it takes a number: the category, the
 * priority, the team, and the automatic assignment's candidates and method (none without candidates). Also used
 * by the tests' bulk seeder (test/support/ticket-seeder.ts).
 */
export function createDecisions(config: AccountConfig, input: CreateTicketInput) {
  const { account } = config;
  const category = resolveCategory(config, input);
  const priority = input.priority ?? account.defaultPriority;
  const teamId = category?.defaultTeamId ?? null;
  const team = teamId === null ? null : (config.teams.find((t) => t.id === teamId) ?? null);
  const assignment = account.autoAssignment;
  const candidates = assignment.enabled ? candidatesFor(config, team?.id ?? null, nowMicros()) : [];
  const method = candidates.length > 0 ? assignment.method : undefined;
  return { category, priority, team, candidates, method };
}

/**
 * DynamoDB keeps at most 400 KB in one item, and the ticket (and the kept answer of its Idempotency-Key) is
 * one item: the longest legal fields in 4-byte characters would pass that, so such a request is refused
 * before it takes a number. The bound is on the request's own JSON text, which the stored ticket tracks.
 */
export const MAX_TICKET_JSON_BYTES = 300 * 1024;

export function refuseOversizedTicket(input: CreateTicketInput, field = 'description'): void {
  if (Buffer.byteLength(JSON.stringify(input), 'utf8') > MAX_TICKET_JSON_BYTES) {
    throw ValidationFailed.field(
      field,
      'The ticket is too large: description and custom fields together must not exceed 300 KB.',
    );
  }
}

function resolveCategory(config: AccountConfig, input: CreateTicketInput): Category | undefined {
  if (input.category_id !== undefined) {
    const found = config.categories.find((c) => c.id === input.category_id);
    if (!found) throw ValidationFailed.field('category_id', 'The selected category id is invalid.');
    return found;
  }
  if (input.category_slug !== undefined) {
    const found = config.categories.find((c) => c.slug === input.category_slug);
    if (!found) throw ValidationFailed.field('category_slug', 'The selected category slug is invalid.');
    return found;
  }
  return undefined;
}
