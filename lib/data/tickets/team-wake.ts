import { queueKeys } from '../keys.ts';
import { getItem, tableName } from '../store/client.ts';
import type { CommitAction } from '../store/transact.ts';
import { freeingMark } from './freed.ts';

/**
 * The team wake (docs/decisions.md, "The queue"; docs/data-model.md, "Tickets"): one item per account,
 * `QUEUE_FREED#<acc>` / `TEAMS`, beside the agents' freed entries and on their due index, holding the set of teams
 * a change left with no active agent (their tickets fall back to the account's agents). The change adds its teams
 * to the set in its own transaction, one Update however many teams it leaves so (a set union: two changes at once
 * both keep theirs) and moves the due key to now with a mark of its own; the queue runner hands their waiting
 * tickets out (lib/tickets/team-wake.ts) and takes the teams it served out of the set (postponeFreed's `served`),
 * or deletes the item (finishFreed), only while the due key is still the one it read, so a team a change added since
 * is never lost.
 */
export function wakeTeamsAction(accountId: string, teamIds: readonly number[], atMs: number): CommitAction {
  const due = queueKeys.wakeDue(accountId, atMs, freeingMark());
  return {
    what: 'queue_wake',
    action: {
      Update: {
        TableName: tableName(),
        Key: queueKeys.wake(accountId),
        UpdateExpression: 'ADD teams :teams SET gsi2pk = :pk, gsi2sk = :sk, #type = :type',
        ExpressionAttributeNames: { '#type': 'type' },
        ExpressionAttributeValues: {
          ':teams': new Set(teamIds),
          ':pk': due.gsi2pk,
          ':sk': due.gsi2sk,
          ':type': 'queue_wake',
        },
      },
    },
  };
}

/** The account's team wake as stored (strongly consistent): its teams in ascending id order and its due key. */
export async function getTeamWake(
  accountId: string,
): Promise<{ teams: number[]; gsi2sk: string } | undefined> {
  const item = await getItem(queueKeys.wake(accountId));
  if (!item) return undefined;
  const teams = [...((item.teams as Set<number> | undefined) ?? [])].map(Number).sort((a, b) => a - b);
  return { teams, gsi2sk: String(item.gsi2sk) };
}
