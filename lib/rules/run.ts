import type { AccountConfig } from '#lib/accounts/types.ts';
import { getOrganizations } from '#lib/data/organizations/organizations.ts';
import { takeCursor } from '#lib/data/tickets/sequences.ts';
import { type BusyCondition, getOpenWork } from '#lib/data/tickets/tickets.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import {
  candidateSetName,
  candidatesFor,
  needsOpenWork,
  type OpenWork,
  pickAssignee,
  pickCondition,
} from '#lib/tickets/assignment.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { Directory } from './actions.ts';
import { type ChangeContext, type Evaluation, evaluateRules } from './evaluate.ts';
import { directoryOf } from './references.ts';
import type { Rule } from './types.ts';

/**
 * A real change's rules (decisions.md, "Business rules"; docs/rules.md, "In the change's transaction"): the one
 * evaluator, run over the directory of what the rules reach beyond the configuration. The evaluator is pure, so
 * what it needs from the store is found by running it: a run that asks for an organization, or for the account's
 * assignment (`assignee_id: "auto"`: the open work, a round-robin cursor), that was not read yet is answered
 * provisionally, the reads it asked for are made (together, one round trip), and it runs again with them. A change
 * whose rules name nothing of the kind (nearly every one) runs once and reads nothing.
 */

export interface RulesRun {
  accountId: string;
  config: AccountConfig;
  /** The account's active rules (the rules cache's: lib/rules/cache.ts). */
  rules: readonly Rule[];
  before: Ticket | null;
  after: Ticket;
  context: ChangeContext;
  /** The agents' open work when the change read it already (a create's least-busy pick). */
  busy?: OpenWork | undefined;
}

export interface RulesResult {
  evaluation: Evaluation;
  /**
   * What the commit checks on the agent the rules' last `"auto"` gave the ticket (as a create's pick: racing changes
   * cannot pass their capacity), when the ticket ends with that agent.
   */
  picked?: BusyCondition | undefined;
}

/** Runs before the directory is complete: each asks for everything its run missed, so two or three suffice. */
const MAX_RUNS = 4;

export async function runRules(run: RulesRun): Promise<RulesResult> {
  const { result, picked } = await withDirectory(
    { ...run, nowUs: run.context.nowUs },
    (directory) => evaluateRules({ ...run, directory }),
    (evaluation) => evaluation.ticket.assignee?.id,
  );
  return { evaluation: result, picked };
}

export interface DirectoryRun {
  accountId: string;
  config: AccountConfig;
  nowUs: number;
  busy?: OpenWork | undefined;
  /**
   * A round-robin cursor of a candidate set: the next one taken (the default, a write: takeCursor), or only read
   * as the next take would answer it (a dry run, which writes nothing).
   */
  cursor?: ((accountId: string, set: string) => Promise<number>) | undefined;
}

/**
 * Runs a pure function of the directory (the evaluator, a macro's application) until it asked for nothing it
 * had not been given: what it asked for is read (together, one round trip) and it runs again with it. Answers its
 * last result and the condition on the agent its last `"auto"` chose, when `assigneeOf` says the result ends with
 * that agent.
 */
export async function withDirectory<T>(
  run: DirectoryRun,
  pure: (directory: Directory) => T,
  assigneeOf: (result: T) => number | undefined,
): Promise<{ result: T; picked: BusyCondition | undefined }> {
  const known = new Map<number, OrganizationRef | undefined>();
  const cursors = new Map<string, number>();
  let busy = run.busy;
  const { config, nowUs } = run;
  const take = run.cursor ?? takeCursor;
  const lookups = directoryOf(config, [], () => null);
  for (let runs = 1; ; runs++) {
    // The last run answers what is still missing as gone (never reached while each run reads what it missed).
    const last = runs === MAX_RUNS;
    const wanted = { organizations: new Set<number>(), busy: false, cursors: new Set<string>() };
    let picked: BusyCondition | undefined;
    const directory: Directory = {
      ...lookups,
      organization: (id) => {
        if (known.has(id) || last) return known.get(id);
        wanted.organizations.add(id);
        return { id, name: '' };
      },
      assign: (ticket) => {
        const method = config.account.autoAssignment.method;
        const candidates = candidatesFor(config, ticket.team?.id ?? null, nowUs);
        if (candidates.length === 0) return null;
        const set = candidateSetName(candidates);
        const missing =
          (needsOpenWork(method, candidates) && !busy) || (method === 'round_robin' && !cursors.has(set));
        if (missing) {
          if (last) return null;
          if (needsOpenWork(method, candidates) && !busy) wanted.busy = true;
          if (method === 'round_robin' && !cursors.has(set)) wanted.cursors.add(set);
          return agentRef(candidates[0] as (typeof candidates)[number]);
        }
        const agent = pickAssignee(method, candidates, { cursor: cursors.get(set), busy });
        picked = agent && pickCondition(method, agent, busy);
        return agent ? agentRef(agent) : null;
      },
    };
    const result = pure(directory);
    if (wanted.organizations.size === 0 && wanted.cursors.size === 0 && !wanted.busy) {
      return { result, picked: picked?.chosen === assigneeOf(result) ? picked : undefined };
    }
    const ids = [...wanted.organizations];
    const [organizations, work, taken] = await Promise.all([
      ids.length > 0 ? getOrganizations(run.accountId, ids) : [],
      wanted.busy ? getOpenWork(run.accountId) : busy,
      Promise.all([...wanted.cursors].map(async (set) => [set, await take(run.accountId, set)] as const)),
    ]);
    for (const id of ids) {
      const found = organizations.find((o) => o.id === id);
      known.set(id, found && { id: found.id, name: found.name });
    }
    busy = work;
    for (const [set, cursor] of taken) cursors.set(set, cursor);
  }
}

const agentRef = (agent: { id: number; name: string; email: string }) => ({
  id: agent.id,
  name: agent.name,
  email: agent.email,
});
