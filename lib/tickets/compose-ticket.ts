import { fullName } from '#lib/accounts/contact-name.ts';
import type { Account, Agent, Category, Contact, Priority, Team } from '#lib/accounts/types.ts';
import { newTicketUuid } from '#lib/data/tickets/tickets.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { formatTimestamp } from '#lib/time.ts';
import { conversationAtCreate } from './conversation.ts';
import type { CreateTicketInput } from './schemas.ts';
import { serviceLevelOf } from './sla.ts';
import type { Ticket } from './types.ts';

/** What a create decided (./create-ticket.ts), composed into the ticket it stores. */
export interface TicketParts {
  account: Account;
  input: CreateTicketInput;
  number: number;
  createdUs: number;
  priority: Priority;
  category: Category | undefined;
  team: Team | null;
  assignee: Agent | undefined;
  contact: Contact | undefined;
  /** The requester's organization (lib/organizations/refs.ts, organizationOfRequester). */
  organization?: OrganizationRef | null;
}

/** The ticket that a create with these decisions stores (pure: also used by the benchmark's bulk loader). */
export function composeTicket(p: TicketParts): Ticket {
  const created = formatTimestamp(p.createdUs);
  const serviceLevel = serviceLevelOf(p.account, {
    priority: p.priority,
    categorySlug: p.category?.slug ?? null,
    createdUs: p.createdUs,
  });
  return {
    uuid: newTicketUuid(p.createdUs, p.number),
    number: p.number,
    reference: formatReference(p.account, p.number),
    subject: p.input.subject,
    description: p.input.description,
    status: 'open',
    priority: p.priority,
    category: p.category ? { id: p.category.id, name: p.category.name, slug: p.category.slug } : null,
    channel: p.input.channel ?? 'api',
    requester: {
      type: 'email',
      name: p.input.requester_name ?? (p.contact ? fullName(p.contact.firstName, p.contact.lastName) : null),
      email: p.input.requester_email,
      phone: p.contact?.phone ?? null,
      contactId: p.contact?.id ?? null,
      clientId: null,
    },
    assignee: p.assignee ? { id: p.assignee.id, name: p.assignee.name, email: p.assignee.email } : null,
    team: p.team ? { id: p.team.id, name: p.team.name } : null,
    // Kept only when there is one: a ticket without one stores (and pays for) no attribute.
    ...(p.organization ? { organization: p.organization } : {}),
    parentUuid: null,
    customFields: p.input.custom_fields ?? {},
    tags: [],
    dueAt: serviceLevel.dueAt,
    createdAt: created,
    updatedAt: created,
    resolvedAt: null,
    closedAt: null,
    // A new ticket's status changed when it was made (decisions.md, "Business rules": `status_changed_at`).
    statusChangedAt: created,
    // The description is the conversation's first message (lib/tickets/conversation.ts).
    ...conversationAtCreate(created),
    messageCount: 1,
    slaTargets: serviceLevel.slaTargets,
  };
}

/** `<PREFIX>-<NUMBER>`, the number zero-padded to 6 digits and wider once past 999999. */
export function formatReference(account: Pick<Account, 'ticketPrefix'>, number: number): string {
  return `${account.ticketPrefix}-${String(number).padStart(6, '0')}`;
}
