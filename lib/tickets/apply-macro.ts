import * as v from 'valibot';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { UpdateTooLarge } from '#lib/data/store/errors.ts';
import { NotFound, PreconditionFailed, ValidationFailed } from '#lib/errors.ts';
import { param, picked } from '#lib/list-params.ts';
import { withCurrentName } from '#lib/organizations/refs.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import { type MacroApplied, macroChange } from '#lib/rules/macro-change.ts';
import { findMacro } from '#lib/rules/macro-resource.ts';
import { presentMacroPreview } from '#lib/rules/present.ts';
import { nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import {
  checkIfMatchLength,
  etagOf,
  firstReadBeside,
  ifMatchHolds,
  updateVersioned,
  type Versioned,
} from '#lib/versioned-update.ts';
import { findTicket } from './get-ticket.ts';
import { writeRuledChange } from './ruled-write.ts';
import { againIfTeamGoneOr422 } from './team-gone.ts';
import type { Ticket } from './types.ts';

/**
 * The `applyMacro` route (decisions.md, "Business rules": `POST /api/tickets/{ticket}/macros/{macro}`;
 * docs/rules.md, "Macros applied"): the macro's actions and the `updated` rules they set off (`via: macro`), in
 * one change of the ticket committed as a PATCH's is (./ruled-write.ts), guarded by the version read (If-Match:
 * 412; without, decided again on the ticket as it now is). `?dry_run=true` reads the same, decides the same, and
 * writes nothing: the ticket as it would be, and what the change would write and which rules would fire.
 */

export const ApplyMacroQueryParams = v.object({
  dry_run: param('dry_run', picked('dry_run', ['true', 'false'] as const), v.picklist(['true', 'false'])),
});

export function parseApplyMacroQuery(query: Record<string, string[]>): { dryRun: boolean } {
  return { dryRun: parseInput(ApplyMacroQueryParams, query).dry_run === 'true' };
}

export interface ApplyMacroOptions {
  dryRun: boolean;
  ifMatch?: string | undefined;
  attach?: ((stored: Versioned<Ticket>) => CommitAttachment) | undefined;
}

/** The ticket after (or, dry, as it would be) and its version; a dry run's `preview` (its version: the read's). */
export interface MacroResult extends Versioned<Ticket> {
  preview?: ReturnType<typeof presentMacroPreview>;
}

const CHANGED = 'The ticket has changed since you read it (If-Match does not match its ETag).';

export async function applyMacroToTicket(
  accountId: string,
  ticketRef: string,
  macroRef: string,
  options: ApplyMacroOptions,
): Promise<MacroResult> {
  return againIfTeamGoneOr422(accountId, () => applyOnce(accountId, ticketRef, macroRef, options));
}

async function applyOnce(
  accountId: string,
  ticketRef: string,
  macroRef: string,
  options: ApplyMacroOptions,
): Promise<MacroResult> {
  checkIfMatchLength(options.ifMatch);
  // The ticket's first read, the macro and the account's rules (the cache's) beside the configuration.
  const read = firstReadBeside(() => findTicket(accountId, ticketRef));
  const rules = getActiveRules(accountId);
  rules.catch(() => undefined);
  const found = findMacro(accountId, macroRef);
  found.catch(() => undefined);
  const config = await getAccountConfig(accountId);
  const macro = await found;
  if (!config || !macro) throw new NotFound();
  const current = async () => {
    const ticket = await read();
    // The ticket's organization under its name as it is now, as a PATCH writes and answers it.
    return ticket && withCurrentName(accountId, ticket);
  };
  const decide = async (before: Ticket, dryRun: boolean) => {
    if (before.status === 'closed') {
      throw ValidationFailed.field('status', 'A closed ticket cannot be changed.');
    }
    const change = { accountId, config, rules: await rules, macro: macro.entity, before, nowUs: nowMicros() };
    return macroChange({ ...change, dryRun });
  };

  if (options.dryRun) {
    const stored = await current();
    if (!stored) throw new NotFound();
    if (options.ifMatch !== undefined && !ifMatchHolds(options.ifMatch, etagOf(stored.version))) {
      throw new PreconditionFailed(CHANGED);
    }
    const { applied, application } = await decide(stored.entity, true);
    const preview = presentMacroPreview(application, stored.entity.requester.email);
    // The version read: an If-Match with it applies exactly this, or answers 412 when the ticket moved on.
    return { entity: applied.ticket, version: stored.version, preview };
  }

  let ruled: MacroApplied | undefined;
  return updateVersioned({
    read: current,
    apply: async (before) => {
      ruled = await decide(before, false);
      return ruled.applied.ticket;
    },
    write: async (before, after, version) => {
      const applied = (ruled as MacroApplied).applied;
      try {
        const lost = applied.clocks;
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
        if (!(error instanceof UpdateTooLarge)) throw error;
        throw ValidationFailed.field(
          'macro',
          'The macro changes too much of this ticket at once to apply it.',
        );
      }
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
}
