import { forgetAccountConfig } from '#lib/accounts/config-cache.ts';
import { TeamGone } from '#lib/data/people/people.ts';
import { ValidationFailed } from '#lib/errors.ts';
import { TEAM_INVALID } from './apply-change.ts';

/**
 * A ticket change decided on a configuration that named the ticket's team, whose commit met the team's deletion
 * (TeamGone: the team's open-work cell closed, lib/data/tickets/tickets.ts): a reopen by a PATCH or by a requester's
 * message of a resolved ticket that keeps its team, a restore of an open one from the trash. Decided again, once, on
 * the configuration as it is now: the reopen or the restore goes to no team (reopenedIntoGoneTeam,
 * ./update-ticket.ts), a team named is a 422 as the same request sent now would answer. Nothing of the first attempt
 * was written (its transaction was refused whole).
 */
export async function againIfTeamGone<T>(accountId: string, change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (!(error instanceof TeamGone)) throw error;
    forgetAccountConfig(accountId);
    return change();
  }
}

/**
 * A change that may name a team (a PATCH, a macro applied), decided again once after a TeamGone (againIfTeamGone);
 * meeting it again, the team named was deleted since the change read it: the 422 the same request sent now gets.
 */
export function againIfTeamGoneOr422<T>(accountId: string, change: () => Promise<T>): Promise<T> {
  return againIfTeamGone(accountId, change).catch((error: unknown) => {
    if (error instanceof TeamGone) throw ValidationFailed.field('team_id', TEAM_INVALID);
    throw error;
  });
}
