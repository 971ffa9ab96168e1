import { isDeepStrictEqual } from 'node:util';

/**
 * A plain in-memory model of the spec's tickets (decisions.md "Ticket list", "Automatic assignment", "One
 * ticket: read and update" and "Events"), for tests that compare the service with it. It is written from the
 * rules, not from lib/: it imports nothing of the implementation, so a rule the code gets wrong cannot be copied
 * into the model that checks it. The only values it takes from the service are the ones it cannot know: the
 * timestamps a change sets (read from the change's own answer) and the identifiers a create gives.
 */
export const STATUSES = ['open', 'pending', 'in_progress', 'resolved', 'closed'] as const;
export const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
const OPEN_WORK: readonly string[] = ['open', 'pending', 'in_progress'];

export type Status = (typeof STATUSES)[number];
export type Fields = Record<string, string | number | boolean>;

/**
 * A timestamp a change sets: the model knows that it is set, not its value (the service's clock), until the
 * change's answer shows it (`settleTimestamps`).
 */
export const SET_NOW = '<set by this change>';

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
  resolvedAt: string | null;
  closedAt: string | null;
  /** When the status last changed: its creation, then each status change (decisions.md, "Business rules"). */
  statusChangedAt: string;
  /** The number in the ETag: 1 on creation, one more for every PATCH that changed something. */
  version: number;
}

/** An agent as a ticket's `assignee` shows it. */
export interface ModelAgent {
  id: number;
  name: string;
  email: string;
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
  status_changed_at: string;
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

/**
 * The spec's rules for one PATCH of a ticket that is not closed (decisions.md, "One ticket"): a PATCH that
 * changes something sets updated_at and takes the next version; one that changes nothing leaves the ticket as
 * it is.
 */
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
    after.statusChangedAt = SET_NOW;
    if (status === 'resolved') after.resolvedAt = SET_NOW;
    else if (status === 'closed') {
      after.closedAt = SET_NOW;
      after.resolvedAt = t.resolvedAt ?? SET_NOW; // resolved_at too, if it was null
    } else after.resolvedAt = null; // a reopen clears resolved_at
  }
  if (!isDeepStrictEqual(after, t)) {
    after.updatedAt = SET_NOW;
    after.version = t.version + 1;
  }
  return after;
}

/**
 * The timestamps a change set, as its answer shows them, put in the model's ticket; and what the answer shows
 * that the model does not expect: a timestamp the change should have set and did not, or one it should have
 * kept and changed.
 */
export function settleTimestamps(t: Modelled, shown: ShownTicket): string[] {
  const problems: string[] = [];
  const fields = [
    ['updatedAt', 'updated_at'],
    ['resolvedAt', 'resolved_at'],
    ['closedAt', 'closed_at'],
    ['statusChangedAt', 'status_changed_at'],
  ] as const;
  for (const [field, name] of fields) {
    const value = shown[name];
    if (t[field] !== SET_NOW) {
      if (value !== t[field]) problems.push(`${name}: shown ${value}, model ${t[field]}`);
    } else if (value === null || value < t.createdAt) {
      problems.push(`${name}: shown ${value}, model a new timestamp`);
    } else t[field] = value;
  }
  return problems;
}

// --- Events (decisions.md, "Events") ---

/** An event as the model predicts it: which object, what happened, its version, the changed fields' old values. */
export interface ModelEvent {
  type: string;
  uuid: string;
  version: number;
  /** `*.updated` only: each top-level field of the GET answer that changed, with its value before. */
  previous?: Record<string, unknown>;
}

/** The fields of a ticket's GET answer that the model knows, as the answer shows them. */
export function ticketView(t: Modelled, agents: ModelAgent[]): Record<string, unknown> {
  const agent = agents.find((a) => a.id === t.assigneeId);
  return {
    uuid: t.uuid,
    reference: t.reference,
    subject: t.subject,
    status: t.status,
    priority: t.priority,
    assignee: agent ? { id: agent.id, name: agent.name, email: agent.email } : null,
    custom_fields: t.customFields,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
    resolved_at: t.resolvedAt,
    closed_at: t.closedAt,
    status_changed_at: t.statusChangedAt,
  };
}

/**
 * The event a create (no `before`) or a PATCH writes: `ticket.created` at version 1; `ticket.updated` with the
 * ticket's new version and, in `previous`, every field of the GET answer that the PATCH changed, with its value
 * before (a changed object whole). A PATCH that changes nothing writes none (undefined).
 */
export function ticketEventOf(
  before: Modelled | undefined,
  after: Modelled,
  agents: ModelAgent[],
): ModelEvent | undefined {
  if (!before) return { type: 'ticket.created', uuid: after.uuid, version: 1 };
  const was = ticketView(before, agents);
  const now = ticketView(after, agents);
  const previous: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(was)) {
    if (!isDeepStrictEqual(value, now[field])) previous[field] = value;
  }
  if (Object.keys(previous).length === 0) return undefined;
  return { type: 'ticket.updated', uuid: after.uuid, version: after.version, previous };
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
  resolved: t.resolvedAt !== null,
  closed: t.closedAt !== null,
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
