import { isDeepStrictEqual } from 'node:util';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { UpdateTooLarge } from '#lib/data/store/errors.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { organizationOfId, withCurrentName } from '#lib/organizations/refs.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import { changeRules, type RulesApplied } from '#lib/rules/in-change.ts';
import { nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { firstReadBeside, updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import { applyChange, resolveReferences } from './apply-change.ts';
import { withLostBreaches } from './breaches.ts';
import { findTicket } from './get-ticket.ts';
import { writeRuledChange } from './ruled-write.ts';
import { UpdateTicketSchema } from './schemas.ts';
import type { ClockState } from './sla-clocks.ts';
import { againIfTeamGoneOr422 } from './team-gone.ts';
import type { Ticket } from './types.ts';

export interface UpdateOptions {
  /** The If-Match header as sent, if any. */
  ifMatch?: string | undefined;
  /** What to write with the change, for the ticket as it is about to be stored (the HTTP stack's kept answer). */
  attach?: ((stored: Versioned<Ticket>) => CommitAttachment) | undefined;
}

/**
 * The `updateTicket` route. Reads the ticket (1 round trip by uuid, 2 by reference), applies the change
 * (status rules, SLA, references checked against the account) and writes ticket and index in one transaction
 * guarded by the version read (1 round trip). Another update landing in between: with If-Match, 412; without,
 * the change is applied again to the ticket as it now is. A change that changes nothing writes nothing. One that
 * met its team's deletion is decided again (againIfTeamGone).
 */
export async function updateTicket(
  accountId: string,
  ref: string,
  body: unknown,
  options: UpdateOptions = {},
): Promise<Versioned<Ticket>> {
  return againIfTeamGoneOr422(accountId, () => updateTicketOnce(accountId, ref, body, options));
}

async function updateTicketOnce(
  accountId: string,
  ref: string,
  body: unknown,
  options: UpdateOptions,
): Promise<Versioned<Ticket>> {
  const input = parseInput(UpdateTicketSchema, body);
  // The current configuration waits for the request's rate count: the ticket's first read runs beside it, and
  // the account's rules (from the container's cache: no round trip while it is warm).
  const read = firstReadBeside(() => findTicket(accountId, ref));
  const rules = getActiveRules(accountId);
  rules.catch(() => undefined);
  // The organization named (a 422 when it is not the account's), read beside the ticket's first read.
  const organization =
    input.organization_id !== undefined ? organizationOfId(accountId, input.organization_id) : undefined;
  organization?.catch(() => undefined);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const changes = resolveReferences(config, input);

  // The breaches the change would lose (a passed due time moved by a priority or category change): written in
  // its commit (lib/tickets/breaches.ts, withLostBreaches). What its rules did, written with it.
  let lost: ClockState[] = [];
  let ruled: RulesApplied | undefined;
  const updated = await updateVersioned({
    read: async () => {
      const [found, named] = await Promise.all([read(), organization]);
      if (named !== undefined) changes.organization = named;
      // A ticket keeping its organization is written (and answered) with its name as it is now.
      return found && named === undefined ? withCurrentName(accountId, found) : found;
    },
    apply: async (before) => {
      if (before.status === 'closed') {
        throw ValidationFailed.field('status', 'A closed ticket cannot be changed.');
      }
      const nowUs = nowMicros();
      const settled = withLostBreaches(before, applyChange(before, input, changes, config, nowUs), nowUs);
      // A change that changes nothing writes nothing, and runs no rule.
      if (isDeepStrictEqual(settled.ticket, before)) return before;
      ruled = await changeRules({
        accountId,
        config,
        rules: await rules,
        before,
        after: settled.ticket,
        context: { kind: 'update', channel: 'api', automatic: false, nowUs },
      });
      lost = [...settled.clocks, ...ruled.clocks];
      return ruled.ticket;
    },
    write: async (before, after, version) => {
      try {
        const applied = ruled as RulesApplied;
        return await writeRuledChange({
          accountId,
          before,
          after,
          version,
          applied,
          lost,
          attach: options.attach,
        });
      } catch (error) {
        if (error instanceof UpdateTooLarge) {
          throw ValidationFailed.field(
            input.custom_fields ? 'custom_fields' : 'subject',
            'The update changes too many custom fields and subject words at once: send it in two updates.',
          );
        }
        throw error;
      }
    },
    ifMatch: options.ifMatch,
    changedMessage: 'The ticket has changed since you read it (If-Match does not match its ETag).',
  });
  return updated;
}
