import type { Ticket } from '#lib/tickets/types.ts';

/**
 * Placeholders in a note's or reply's body (decisions.md, "Business rules"): `{{ticket.reference}}` and the like,
 * spaces inside the braces allowed (`{{ ticket.subject }}`). An unknown one is refused when the rule is saved
 * (unknownPlaceholders), so rendering never meets one; text that is no placeholder (`{{`, `{ {x} }`) stays as is.
 */
export const PLACEHOLDERS = [
  'ticket.reference',
  'ticket.subject',
  'ticket.status',
  'requester.name',
  'agent.name',
] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

const PLACEHOLDER = /\{\{\s*([^{}\s]*)\s*\}\}/g;

/** The placeholders a body names that are not known, in the order written, each once. */
export function unknownPlaceholders(body: string): string[] {
  const names = [...body.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
  return [...new Set(names.filter((name) => !(PLACEHOLDERS as readonly string[]).includes(name)))];
}

/**
 * The body with its placeholders filled from the ticket after the change (its status and assignee included) and
 * the agent the action names, else its assignee; a name not known (a requester without one, no agent) is ''.
 */
export function renderBody(body: string, ticket: Ticket, agentName: string | null): string {
  const values: Record<Placeholder, string> = {
    'ticket.reference': ticket.reference,
    'ticket.subject': ticket.subject,
    'ticket.status': ticket.status,
    'requester.name': ticket.requester.erased ? '' : (ticket.requester.name ?? ''),
    'agent.name': agentName ?? ticket.assignee?.name ?? '',
  };
  return body.replace(PLACEHOLDER, (whole, name: string) =>
    Object.hasOwn(values, name) ? values[name as Placeholder] : whole,
  );
}
