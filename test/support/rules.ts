import type { AccountConfig } from '#lib/accounts/types.ts';
import type { ChangeContext } from '#lib/rules/evaluate.ts';
import { directoryOf, referencesOf } from '#lib/rules/references.ts';
import { parseRule } from '#lib/rules/schemas.ts';
import type { Rule } from '#lib/rules/types.ts';
import type { Ticket } from '#lib/tickets/types.ts';

/**
 * Fixtures of the rules' unit tests (test/unit/rules-*.test.ts): one small account (two teams, three agents of
 * which one is inactive, two categories, one organization), a ticket factory, and rules made from the API's own
 * bodies through parseRule, so every rule a test runs is one the API would have accepted.
 */

export const T0 = Date.parse('2026-03-16T10:00:00Z') * 1000;
export const MINUTE = 60_000_000;
export const ts = (us: number) => new Date(Math.floor(us / 1000)).toISOString().replace('Z', '000Z');

export const world: Pick<AccountConfig, 'teams' | 'agents' | 'categories'> = {
  teams: [
    { id: 1, name: 'Billing' },
    { id: 2, name: 'Tech' },
  ],
  agents: [
    { id: 1, name: 'Ann', email: 'ann@desk.test', active: true, teamIds: [1] },
    { id: 2, name: 'Bob', email: 'bob@desk.test', active: true, teamIds: [2] },
    { id: 3, name: 'Cy', email: 'cy@desk.test', active: false, teamIds: [1] },
  ],
  categories: [
    { id: 1, slug: 'billing', name: 'Billing', defaultTeamId: 1 },
    { id: 2, slug: 'tech', name: 'Tech', defaultTeamId: 2 },
  ],
};
export const organizations = [{ id: 7, name: 'Acme' }];

/** The fixture's assignment: the lowest-id active agent of the ticket's team, else of the account. */
export function fixtureAssign(ticket: Ticket): Ticket['assignee'] {
  const active = world.agents.filter((a) => a.active);
  const agent = active.find((a) => ticket.team && a.teamIds.includes(ticket.team.id)) ?? active[0];
  return agent ? { id: agent.id, name: agent.name, email: agent.email } : null;
}

export const refs = (otherActiveRules = 0) => referencesOf(world, organizations, otherActiveRules);
export const directory = directoryOf(world, organizations, fixtureAssign);

export function ticket(fields: Partial<Ticket> = {}): Ticket {
  return {
    uuid: '00000000-0000-7000-8000-000000000001',
    number: 1,
    reference: 'TKT-000001',
    subject: 'Invoice question',
    description: 'Please help',
    status: 'open',
    priority: 'medium',
    category: null,
    channel: 'email',
    requester: {
      type: 'email',
      name: 'Rita',
      email: 'rita@customer.test',
      phone: null,
      contactId: null,
      clientId: null,
    },
    assignee: null,
    team: null,
    parentUuid: null,
    customFields: {},
    tags: [],
    dueAt: null,
    createdAt: ts(T0),
    updatedAt: ts(T0),
    resolvedAt: null,
    closedAt: null,
    ...fields,
  };
}

let nextId = 1;
/** A rule from an API body (wire form), with the stored fields a saved rule has. */
export function rule(body: Record<string, unknown>, saved: Partial<Rule> = {}): Rule {
  const input = parseRule({ name: `rule ${nextId}`, ...body }, refs());
  const id = saved.id ?? nextId++;
  return {
    ...input,
    id,
    position: input.position ?? id,
    version: 1,
    createdAt: ts(T0 - 60 * MINUTE),
    updatedAt: ts(T0 - 60 * MINUTE),
    ...saved,
  };
}

export function context(fields: Partial<ChangeContext> = {}): ChangeContext {
  return {
    kind: 'update',
    channel: 'api',
    automatic: false,
    imported: false,
    ruleRepliesLastHour: 0,
    nowUs: T0 + MINUTE,
    ...fields,
  };
}
