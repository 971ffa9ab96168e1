import { type AccountConfig, type Contact, rateLimitOf } from './types.ts';

/** The account state printed by `apply` (operations.md); `api_key` only when this apply issued one. */
export function accountState(config: AccountConfig, apiKey: string | undefined, contacts: Contact[]) {
  const { account } = config;
  return {
    account: {
      id: account.id,
      slug: account.slug,
      name: account.name,
      plan: account.plan,
      rate_limit_per_minute: rateLimitOf(account),
    },
    ...(apiKey ? { api_key: apiKey } : {}),
    teams: config.teams.map((t) => ({ id: t.id, name: t.name })),
    agents: config.agents.map((a) => ({
      id: a.id,
      email: a.email,
      name: a.name,
      active: a.active,
      team_ids: a.teamIds,
    })),
    categories: config.categories.map((c) => ({
      id: c.id,
      slug: c.slug,
      name: c.name,
      default_team_id: c.defaultTeamId,
    })),
    pipelines: config.pipelines.map((p) => ({
      id: p.id,
      name: p.name,
      is_default: p.isDefault,
      active: p.active,
      stages: p.stages.map((s) => ({ ...s })),
    })),
    contacts: contacts.map((c) => ({
      id: c.id,
      uuid: c.uuid,
      email: c.email,
      first_name: c.firstName,
      last_name: c.lastName,
      phone: c.phone,
    })),
  };
}
