import type { BusinessHours, Priority, SlaPolicy } from '#lib/accounts/types.ts';
import { addBusinessMinutes } from './business-hours.ts';

/**
 * The service-level policy of a ticket: among the policies whose every condition equals the ticket's, the one
 * with more conditions wins; a tie goes to the earlier policy in the account's list (decisions.md).
 */
export function matchPolicy(
  policies: readonly SlaPolicy[],
  ticket: { priority: Priority; categorySlug: string | null },
): SlaPolicy | undefined {
  let best: SlaPolicy | undefined;
  let bestConditions = -1;
  for (const policy of policies) {
    if (policy.priority !== null && policy.priority !== ticket.priority) continue;
    if (policy.category !== null && policy.category !== ticket.categorySlug) continue;
    const conditions = (policy.priority === null ? 0 : 1) + (policy.category === null ? 0 : 1);
    if (conditions > bestConditions) {
      best = policy;
      bestConditions = conditions;
    }
  }
  return best;
}

/** due_at in epoch microseconds, or null when no policy applies. */
export function dueAt(
  createdUs: number,
  policy: SlaPolicy | undefined,
  calendar: BusinessHours | null,
): number | null {
  if (!policy) return null;
  if (policy.businessHours && calendar)
    return addBusinessMinutes(createdUs, policy.resolutionMinutes, calendar);
  return createdUs + policy.resolutionMinutes * 60_000_000;
}
