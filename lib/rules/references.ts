import type { AccountConfig } from '#lib/accounts/types.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { Directory } from './actions.ts';

/**
 * What a rule or macro may name, from the account (decisions.md: "an unknown status, team or agent is a 422 on its
 * path"), and the directory the evaluator resolves them with. Both are built from what the caller read: the
 * configuration (teams, agents, categories) and the organizations the body names (read by id: they are not in the
 * configuration), so checking a rule stays pure.
 */
export interface RuleReferences {
  teamIds: ReadonlySet<number>;
  /** Every agent of the account: a condition may name one deactivated since (its old tickets keep them). */
  agentIds: ReadonlySet<number>;
  /** Active agents: who an action may assign or write as. */
  activeAgentIds: ReadonlySet<number>;
  categorySlugs: ReadonlySet<string>;
  organizationIds: ReadonlySet<number>;
  /** The account's active rules besides the one checked (at most 1,000 with it). */
  otherActiveRules: number;
}

export function referencesOf(
  config: Pick<AccountConfig, 'teams' | 'agents' | 'categories'>,
  organizations: readonly Pick<OrganizationRef, 'id'>[],
  otherActiveRules = 0,
): RuleReferences {
  return {
    teamIds: new Set(config.teams.map((t) => t.id)),
    agentIds: new Set(config.agents.map((a) => a.id)),
    activeAgentIds: new Set(config.agents.filter((a) => a.active).map((a) => a.id)),
    categorySlugs: new Set(config.categories.map((c) => c.slug)),
    organizationIds: new Set(organizations.map((o) => o.id)),
    otherActiveRules,
  };
}

/** The organization ids a rule's or macro's body names (conditions and `set` actions), to read before checking it. */
export function namedOrganizationIds(body: unknown): number[] {
  const ids = new Set<number>();
  const visit = (item: unknown) => {
    if (typeof item !== 'object' || item === null) return;
    const { field, value } = item as { field?: unknown; value?: unknown };
    if (field !== 'organization_id') return;
    for (const x of Array.isArray(value) ? value : [value]) {
      if (Number.isSafeInteger(x) && (x as number) > 0) ids.add(x as number);
    }
  };
  const { conditions, actions } = (typeof body === 'object' && body !== null ? body : {}) as Record<
    string,
    unknown
  >;
  const groups = (typeof conditions === 'object' && conditions !== null ? conditions : {}) as Record<
    string,
    unknown
  >;
  for (const list of [groups.all, groups.any, actions]) if (Array.isArray(list)) list.forEach(visit);
  return [...ids].sort((a, b) => a - b);
}

/**
 * The evaluator's directory over the configuration and the organizations read (those the account's rules name),
 * with the caller's assignment for `assignee_id: "auto"` (lib/tickets/assignment.ts picks; the caller reads the
 * open work it needs and passes the pick, so evaluation stays pure).
 */
export function directoryOf(
  config: Pick<AccountConfig, 'teams' | 'agents' | 'categories'>,
  organizations: readonly OrganizationRef[],
  assign: (ticket: Ticket) => Ticket['assignee'],
): Directory {
  const team = (id: number) => config.teams.find((t) => t.id === id);
  const agent = (id: number) => config.agents.find((a) => a.id === id && a.active);
  const category = (slug: string) => config.categories.find((c) => c.slug === slug);
  return {
    team: (id) => {
      const found = team(id);
      return found && { id: found.id, name: found.name };
    },
    agent: (id) => {
      const found = agent(id);
      return found && { id: found.id, name: found.name, email: found.email };
    },
    category: (slug) => {
      const found = category(slug);
      return found && { id: found.id, name: found.name, slug: found.slug };
    },
    organization: (id) => {
      const found = organizations.find((o) => o.id === id);
      return found && { id: found.id, name: found.name };
    },
    assign,
  };
}
