import { fullName } from '#lib/accounts/contact-name.ts';
import type { AccountConfig, Agent, Contact, Team } from '#lib/accounts/types.ts';
import { findContactsByEmail, getContactByUuid, getStoredContacts } from '#lib/data/contacts/contacts.ts';
import { findSourceKeys, type SourceKeyRecord } from '#lib/data/imports/source-keys.ts';
import { findWouldCreate } from '#lib/data/imports/would-create.ts';
import { getOrganizations } from '#lib/data/organizations/organizations.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { ImportErrorRow, ImportedAuthor, ImportedTicket, ImportSource } from './records.ts';

/**
 * The people a page of imported tickets names, read once for the page (lib/imports/tickets.ts): agents, teams,
 * organizations and contacts by their source keys (written by the people phase before tickets), and requesters
 * named only by their address by it. A name that finds nothing is an error row, and the ticket is imported without
 * it (decisions.md, "Imports": a conversation is never cut).
 */
export interface PageRefs {
  agents: Map<string, Agent>;
  teams: Map<string, Team>;
  organizations: Map<string, OrganizationRef>;
  /** Contacts by source id, and by lower-cased address. */
  contacts: Map<string, Contact>;
  contactsByEmail: Map<string, Contact>;
}

const ids = (values: (string | null)[]) => [...new Set(values.filter((v): v is string => v !== null))];

/**
 * Reads what the page's tickets name (a BatchGet per kind, beside each other). Validating (`validateImportId`), the
 * people that validate run decided it would create are found too (lib/data/imports/would-create.ts), as stand-ins:
 * a run would have them by now, and validate decides from them and writes nothing.
 */
export async function readPageRefs(
  accountId: string,
  config: AccountConfig,
  source: ImportSource,
  tickets: ImportedTicket[],
  validateImportId?: string,
): Promise<PageRefs> {
  const messages = tickets.flatMap((t) => t.messages);
  const named = {
    agents: ids([
      ...tickets.map((t) => t.assigneeSourceId),
      ...tickets.map((t) => t.requester.sourceId),
      ...messages.map((m) => (m.author.kind === 'agent' ? m.author.sourceId : null)),
    ]),
    teams: ids(tickets.map((t) => t.teamSourceId)),
    organizations: ids(tickets.map((t) => t.organizationSourceId)),
    contacts: ids([
      ...tickets.map((t) => t.requester.sourceId),
      ...messages.map((m) => (m.author.kind === 'contact' ? m.author.sourceId : null)),
    ]),
  };
  const find = (type: keyof typeof named) => findSourceKeys(accountId, source, type, named[type]);
  const [agentKeys, teamKeys, orgKeys, contactKeys] = await Promise.all([
    find('agents'),
    find('teams'),
    find('organizations'),
    find('contacts'),
  ]);
  const would = async (type: keyof typeof named, keys: Map<string, SourceKeyRecord>) =>
    validateImportId === undefined
      ? new Set<string>()
      : findWouldCreate(
          accountId,
          validateImportId,
          source,
          type,
          named[type].filter((id) => !keys.has(id)),
        );
  const [wouldAgents, wouldTeams, wouldOrgs, wouldContacts] = await Promise.all([
    would('agents', agentKeys),
    would('teams', teamKeys),
    would('organizations', orgKeys),
    would('contacts', contactKeys),
  ]);
  const byNumber = <T extends { id: number }>(found: Map<string, SourceKeyRecord>, all: T[]) => {
    const out = new Map<string, T>();
    for (const [sourceId, key] of found) {
      const hit = all.find((x) => x.id === Number(key.objectId));
      if (hit) out.set(sourceId, hit);
    }
    return out;
  };
  const emails = ids(tickets.map((t) => t.requester.email?.toLowerCase() ?? null));
  const [contacts, byEmail, orgs] = await Promise.all([
    contactsOf(accountId, contactKeys),
    emails.length ? findContactsByEmail(accountId, emails) : [],
    getOrganizations(
      accountId,
      [...orgKeys.values()].map((k) => Number(k.objectId)),
    ),
  ]);
  const organizations = new Map<string, OrganizationRef>();
  for (const [sourceId, key] of orgKeys) {
    const org = orgs.find((o) => o.id === Number(key.objectId));
    if (org) organizations.set(sourceId, { id: org.id, name: org.name });
  }
  const refs: PageRefs = {
    agents: byNumber(agentKeys, config.agents),
    teams: byNumber(teamKeys, config.teams),
    organizations,
    contacts,
    contactsByEmail: new Map(byEmail.map((c) => [c.email.toLowerCase(), c])),
  };
  for (const id of wouldAgents) refs.agents.set(id, { ...WOULD_BE, active: true, teamIds: [] });
  for (const id of wouldTeams) refs.teams.set(id, WOULD_BE);
  for (const id of wouldOrgs) refs.organizations.set(id, WOULD_BE);
  for (const id of wouldContacts)
    refs.contacts.set(id, {
      ...WOULD_BE,
      uuid: '',
      firstName: '',
      lastName: null,
      phone: null,
      createdAt: '',
    });
  return refs;
}

/** A stand-in for a person a validate run would have created: resolvable, never written. */
const WOULD_BE = { id: 0, name: '', email: '(would be imported)' };

/** Contacts by source id: the key holds the contact's uuid (or its number). */
async function contactsOf(accountId: string, keys: Map<string, SourceKeyRecord>) {
  const out = new Map<string, Contact>();
  const numbered = [...keys].filter(
    ([, k]) => typeof k.objectId === 'number' || /^\d+$/.test(String(k.objectId)),
  );
  const stored = await getStoredContacts(
    accountId,
    numbered.map(([, k]) => Number(k.objectId)),
  );
  for (const [sourceId, k] of numbered) {
    const hit = stored.find((c) => c.entity.id === Number(k.objectId));
    if (hit) out.set(sourceId, hit.entity);
  }
  const byUuid = [...keys].filter(([sourceId]) => !out.has(sourceId));
  await Promise.all(
    byUuid.map(async ([sourceId, k]) => {
      const hit = await getContactByUuid(accountId, String(k.objectId));
      if (hit) out.set(sourceId, hit.entity);
    }),
  );
  return out;
}

/** What a ticket's names became: each resolved, or an error row and none. */
export interface ResolvedTicket {
  requester: Ticket['requester'];
  assignee: Ticket['assignee'];
  team: Ticket['team'];
  organization: OrganizationRef | null;
  authors: Message['author'][];
  errors: ImportErrorRow[];
}

/** Resolves one ticket's names against the page's reads; undefined requester: no address to file it under. */
export function resolveTicket(record: ImportedTicket, refs: PageRefs): ResolvedTicket | { failed: string } {
  const errors: ImportErrorRow[] = [];
  const miss = (what: string, sourceId: string) =>
    errors.push({
      type: 'tickets',
      sourceId: record.sourceId,
      reason: `${what} ${sourceId} was not imported`,
    });
  const { sourceId: rid, email } = record.requester;
  const contact =
    (rid !== null ? refs.contacts.get(rid) : undefined) ??
    (email ? refs.contactsByEmail.get(email.toLowerCase()) : undefined);
  const agentRequester = rid !== null && !contact ? refs.agents.get(rid) : undefined;
  const address = contact?.email ?? email ?? agentRequester?.email;
  if (!address) return { failed: 'The requester has no e-mail address and names no imported contact' };
  const requester: Ticket['requester'] = {
    type: 'email',
    name: contact ? fullName(contact.firstName, contact.lastName) : (agentRequester?.name ?? null),
    email: address,
    phone: contact?.phone ?? null,
    contactId: contact?.id ?? null,
    clientId: null,
  };
  const pick = <T>(map: Map<string, T>, sourceId: string | null, what: string): T | null => {
    if (sourceId === null) return null;
    const hit = map.get(sourceId);
    if (!hit) miss(what, sourceId);
    return hit ?? null;
  };
  const agent = pick(refs.agents, record.assigneeSourceId, 'The assignee');
  const team = pick(refs.teams, record.teamSourceId, 'The team');
  const organization = pick(refs.organizations, record.organizationSourceId, 'The organization');
  const authors = record.messages.map((m) => {
    const author = authorOf(m.author, refs, requester, rid);
    if (author.type === 'system') {
      errors.push({
        type: 'messages',
        sourceId: m.sourceId,
        reason: `The author (${m.author.kind} ${m.author.sourceId ?? 'unknown'}) was not imported: kept as system`,
      });
    }
    return author;
  });
  return {
    requester,
    assignee: agent ? { id: agent.id, name: agent.name, email: agent.email } : null,
    team: team ? { id: team.id, name: team.name } : null,
    organization,
    authors,
    errors,
  };
}

function authorOf(
  author: ImportedAuthor,
  refs: PageRefs,
  requester: Ticket['requester'],
  requesterSourceId: string | null,
): Message['author'] {
  if (author.kind === 'agent' && author.sourceId !== null) {
    const agent = refs.agents.get(author.sourceId);
    if (agent) return { type: 'agent', agentId: agent.id, name: agent.name, email: agent.email };
  }
  if (author.kind === 'contact' && author.sourceId !== null) {
    const contact = refs.contacts.get(author.sourceId);
    if (contact) {
      const name = fullName(contact.firstName, contact.lastName);
      return { type: 'requester', agentId: null, name, email: contact.email };
    }
    // The requester found by its address alone (no contact key): its messages are the requester's.
    if (author.sourceId === requesterSourceId) {
      return { type: 'requester', agentId: null, name: requester.name, email: requester.email };
    }
  }
  return { type: 'system', agentId: null, name: null, email: null };
}
