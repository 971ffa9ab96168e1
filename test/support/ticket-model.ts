/**
 * A plain in-memory model of the spec's tickets (decisions.md "Ticket list", "Automatic assignment" and "One
 * ticket: read and update"), for tests that compare the service with it. It is written from the rules, not
 * from lib/: it imports nothing of the implementation, so a rule the code gets wrong cannot be copied into the
 * model that checks it.
 */
export const STATUSES = ['open', 'pending', 'in_progress', 'resolved', 'closed'] as const;
export const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
const OPEN_WORK: readonly string[] = ['open', 'pending', 'in_progress'];

export type Status = (typeof STATUSES)[number];
export type Fields = Record<string, string | number | boolean>;

/** The model's ticket: what the spec says it is after every command so far. */
export interface Modelled {
  uuid: string;
  reference: string;
  email: string;
  createdAt: string;
  updatedAt: string;
  subject: string;
  priority: string;
  status: Status;
  assigneeId: number | null;
  customFields: Fields;
  resolved: boolean;
  closed: boolean;
}

/** A ticket as the service shows it (create, GET, PATCH and list answers share these fields). */
export interface ShownTicket {
  uuid: string;
  reference: string;
  subject: string;
  priority: string;
  status: Status;
  requester: { email: string };
  assignee: { id: number } | null;
  custom_fields: Fields;
  created_at: string;
  updated_at: string;
  resolved_at: string | null;
  closed_at: string | null;
}

// --- Search (decisions.md, "Ticket list" and "Search words") ---

/** Letters and digits of any script; everything else is punctuation or a separator. */
const EDGE_PUNCTUATION = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;
const INNER_SEPARATOR = /[^\p{L}\p{N}]+/u;
/** "Terms are cut to 64 characters": a search word longer than that is compared by its first 64. */
const TERM_LENGTH = 64;

/** A subject's words: whitespace tokens without edge punctuation (`invoice,` → `invoice`), and their inner parts. */
export function subjectWords(subject: string): string[] {
  const words: string[] = [];
  for (const token of subject.toLowerCase().split(/\s+/)) {
    const trimmed = token.replace(EDGE_PUNCTUATION, '');
    if (!trimmed) continue;
    words.push(trimmed, ...trimmed.split(INNER_SEPARATOR).filter(Boolean));
  }
  return words;
}

/** The words of a search: split on whitespace, lower-cased. */
export function searchWords(search: string): string[] {
  return search
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => word.slice(0, TERM_LENGTH));
}

/** What a ticket can be found by: its subject, its reference (`TKT-000012`) and its requester's e-mail. */
export interface Searchable {
  subject: string;
  reference: string;
  email: string;
}

/**
 * One search word matches when it is a prefix of a word of the subject, a prefix of the reference, the ticket's
 * number without its padding (`12` finds `TKT-000012`), or a prefix of the requester e-mail, whole (`ann@ex`) or
 * from its domain (`example.com`); case-insensitive.
 */
export function wordMatches(ticket: Searchable, word: string): boolean {
  const email = ticket.email.toLowerCase();
  const domain = email.slice(email.lastIndexOf('@') + 1);
  const digits = ticket.reference.slice(ticket.reference.lastIndexOf('-') + 1);
  const unpadded = digits.replace(/^0+(?=\d)/, '');
  return (
    subjectWords(ticket.subject).some((w) => w.startsWith(word)) ||
    ticket.reference.toLowerCase().startsWith(word) ||
    word === unpadded ||
    email.startsWith(word) ||
    domain.startsWith(word)
  );
}

/** Every word of the search matches the ticket (a blank search matches every ticket). */
export function searchMatches(ticket: Searchable, search: string): boolean {
  return searchWords(search).every((word) => wordMatches(ticket, word));
}

// --- The list ---

/** The tickets a list query selects, newest first (created_at descending, reference descending on ties). */
export function listed(tickets: Modelled[], q: Record<string, string>): Modelled[] {
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  const field = (t: Modelled, key: string) =>
    !q[`custom_fields[${key}]`] ||
    (key in t.customFields && text(t.customFields[key]) === q[`custom_fields[${key}]`]);
  return tickets
    .filter((t) => !q.status || t.status === q.status)
    .filter((t) => !q.priority || t.priority === q.priority)
    .filter((t) => !q.assignee_id || t.assigneeId === Number(q.assignee_id))
    .filter((t) => !q.requester_email || t.email.toLowerCase() === q.requester_email.toLowerCase())
    .filter((t) => field(t, 'plan') && field(t, 'seats'))
    .filter((t) => !q.search || searchMatches(t, q.search))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.reference.localeCompare(a.reference));
}

// --- Writes ---

/** least_busy: the agent with the fewest tickets in open work, ties to the lowest id. */
export function leastBusy(tickets: Modelled[], agentIds: number[]): number | null {
  const busy = (id: number) =>
    tickets.filter((t) => t.assigneeId === id && OPEN_WORK.includes(t.status)).length;
  return [...agentIds].sort((a, b) => busy(a) - busy(b) || a - b)[0] ?? null;
}

/** The spec's rules for one PATCH of a ticket that is not closed (decisions.md, "One ticket"). */
export function applyPatch(t: Modelled, body: Record<string, unknown>): Modelled {
  const after: Modelled = { ...t, customFields: { ...t.customFields } };
  if (typeof body.subject === 'string') after.subject = body.subject;
  if (typeof body.priority === 'string') after.priority = body.priority;
  if (body.assignee_id !== undefined) after.assigneeId = body.assignee_id as number | null;
  if (body.custom_fields) {
    for (const [key, value] of Object.entries(body.custom_fields as Record<string, unknown>)) {
      if (value === null) delete after.customFields[key];
      else after.customFields[key] = value as Fields[string];
    }
  }
  const status = body.status as Status | undefined;
  if (status !== undefined && status !== t.status) {
    after.status = status;
    if (status === 'resolved') after.resolved = true;
    else if (status === 'closed') {
      after.closed = true;
      after.resolved = true; // resolved_at too, if it was null
    } else after.resolved = false; // a reopen clears resolved_at
  }
  return after;
}

// --- Comparison ---

/** What the model says of a ticket, in one shape with shownOf, for comparison. */
export const expectedOf = (t: Modelled) => ({
  reference: t.reference,
  subject: t.subject,
  priority: t.priority,
  status: t.status,
  assignee: t.assigneeId,
  custom_fields: t.customFields,
  resolved: t.resolved,
  closed: t.closed,
});

/** What the service shows of a ticket, in the shape of expectedOf. */
export const shownOf = (t: ShownTicket) => ({
  reference: t.reference,
  subject: t.subject,
  priority: t.priority,
  status: t.status,
  assignee: t.assignee?.id ?? null,
  custom_fields: t.custom_fields,
  resolved: t.resolved_at !== null,
  closed: t.closed_at !== null,
});
