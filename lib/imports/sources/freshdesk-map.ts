/**
 * Freshdesk API v2's people in deskpipe's import terms (records.ts): agents, groups, companies and contacts, and
 * the helpers every Freshdesk mapping reads with (tickets: freshdesk-ticket-map.ts). Pure: each answers a record or
 * the reason it cannot be one (the reader makes that reason an error row; nothing here throws). Shapes as
 * developers.freshdesk.com documents them: ids are numbers, times `2015-08-24T11:56:51Z`.
 */
import type {
  ImportedAgent,
  ImportedContact,
  ImportedOrganization,
  ImportedTeam,
} from '#lib/imports/records.ts';
import { formatTimestamp, parseInstant, type Timestamp } from '#lib/time.ts';

/** A Freshdesk object as JSON gives it: read field by field, never trusted. */
export type FreshdeskObject = Record<string, unknown>;

/** What a mapping answers: the record, or why it cannot be one. */
export type Mapped<T> = { ok: true; value: T } | { ok: false; reason: string };

export const fail = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

/** A source id: Freshdesk's numeric id as a string; null when absent. */
export function idOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value === 'string' && /^\d+$/.test(value)) return value;
  return null;
}

/** A Freshdesk time as the API's timestamp; undefined when it is not one (or before 1970). */
export function timeOf(value: unknown): Timestamp | undefined {
  if (typeof value !== 'string') return undefined;
  const us = parseInstant(value);
  return us === undefined || us < 0 ? undefined : formatTimestamp(us);
}

export const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** Agents' teams, from the groups' `agent_ids`. */
export function membershipsOf(groups: FreshdeskObject[]): Map<string, string[]> {
  const teams = new Map<string, string[]>();
  for (const group of groups) {
    const groupId = idOf(group.id);
    if (!groupId || !Array.isArray(group.agent_ids)) continue;
    for (const agent of group.agent_ids) {
      const agentId = idOf(agent);
      if (agentId) teams.set(agentId, [...(teams.get(agentId) ?? []), groupId]);
    }
  }
  return teams;
}

export function mapAgent(agent: FreshdeskObject, teams: Map<string, string[]>): Mapped<ImportedAgent> {
  const sourceId = idOf(agent.id);
  if (!sourceId) return fail('the agent has no id');
  const contact = (agent.contact ?? {}) as FreshdeskObject;
  const email = text(contact.email);
  if (!email) return fail('the agent has no e-mail address');
  return {
    ok: true,
    value: {
      sourceId,
      email,
      name: text(contact.name) || email,
      // An agent deactivated, or whose contact is not active (never verified), is imported inactive.
      active: contact.active === true && agent.deactivated !== true,
      teamSourceIds: teams.get(sourceId) ?? [],
    },
  };
}

export function mapGroup(group: FreshdeskObject): Mapped<ImportedTeam> {
  const [sourceId, name] = [idOf(group.id), text(group.name)];
  if (!sourceId) return fail('the group has no id');
  return name ? { ok: true, value: { sourceId, name } } : fail('the group has no name');
}

export function mapCompany(company: FreshdeskObject): Mapped<ImportedOrganization> {
  const [sourceId, name] = [idOf(company.id), text(company.name)];
  if (!sourceId) return fail('the company has no id');
  if (!name) return fail('the company has no name');
  const domains = Array.isArray(company.domains)
    ? company.domains.filter((d): d is string => typeof d === 'string' && d.length > 0)
    : [];
  return { ok: true, value: { sourceId, name, domains } };
}

export function mapContact(contact: FreshdeskObject): Mapped<ImportedContact> {
  const sourceId = idOf(contact.id);
  if (!sourceId) return fail('the contact has no id');
  const email = text(contact.email);
  if (!email) return fail('the contact has no e-mail address');
  return {
    ok: true,
    value: {
      sourceId,
      email,
      name: text(contact.name),
      phone: text(contact.phone) || text(contact.mobile),
      organizationSourceId: idOf(contact.company_id),
    },
  };
}
