/**
 * What every import source gives the import engine (spec/decisions.md, "Imports: moving a helpdesk in"): the
 * source's objects in deskpipe's terms, each keyed by its source id, and the error rows of what could not be
 * mapped. A source (lib/imports/sources/: Zendesk, Freshdesk, deskpipe's own ndjson line format) reads its pages
 * and maps them to these; the engine alone writes (keyed by `(source, type, source_id)`, silently).
 *
 * A source's mapping is pure: status, priority and custom-field titles are translated here, by the source, so the
 * engine never learns a vendor's vocabulary. Times are the API's timestamps (lib/time.ts), the source's own.
 */
import type { Priority } from '#lib/accounts/types.ts';
import type { TicketStatus } from '#lib/tickets/types.ts';
import type { Timestamp } from '#lib/time.ts';
import type { AttachmentFiles } from './attachments.ts';

export const IMPORT_SOURCES = ['zendesk', 'freshdesk', 'ndjson'] as const;
export type ImportSource = (typeof IMPORT_SOURCES)[number];

/** The object types of an import, in the order they are read and written (people first, then tickets). */
export const IMPORT_TYPES = [
  'agents',
  'teams',
  'organizations',
  'contacts',
  'tickets',
  'messages',
  'attachments',
] as const;
export type ImportType = (typeof IMPORT_TYPES)[number];

/** The phases a source is read in: each a resumable stream of pages. Messages and attachments come with tickets. */
export const IMPORT_PHASES = ['agents', 'teams', 'organizations', 'contacts', 'tickets'] as const;
export type ImportPhase = (typeof IMPORT_PHASES)[number];

export interface ImportedAgent {
  sourceId: string;
  email: string;
  name: string;
  /** Active at the source (suspended or inactive agents are imported inactive). */
  active: boolean;
  /** The teams (source ids) the agent is a member of. */
  teamSourceIds: string[];
}

export interface ImportedTeam {
  sourceId: string;
  name: string;
}

export interface ImportedOrganization {
  sourceId: string;
  name: string;
  /** As the source has them; the engine drops a free-mail or disposable one with an error row. */
  domains: string[];
}

export interface ImportedContact {
  sourceId: string;
  email: string;
  name: string | null;
  phone: string | null;
  organizationSourceId: string | null;
}

/** Who wrote a message: an agent or a contact of the source, by source id; `unknown` when the source has none. */
export interface ImportedAuthor {
  kind: 'agent' | 'contact' | 'unknown';
  sourceId: string | null;
}

export interface ImportedAttachment {
  sourceId: string;
  fileName: string;
  contentType: string;
  /** Bytes, as the source states it (null when it does not). */
  size: number | null;
  /** Where the bytes are fetched (a vendor's): only from the hosts the source documents for them. */
  url?: string | undefined;
  /** The bytes themselves, base64 (deskpipe's own format carries them in its file: nothing is fetched). */
  content?: string | undefined;
  /** Why the source's reader refuses to copy it (an error row's reason), decided before anything is stored. */
  refused?: string | undefined;
}

export interface ImportedMessage {
  sourceId: string;
  author: ImportedAuthor;
  /** Plain text. */
  body: string;
  /** Private at the source: an internal note here. */
  internal: boolean;
  createdAt: Timestamp;
  /** An e-mail comment's Message-ID (without angle brackets), so a reply to the old mail threads in. */
  messageId: string | null;
  attachments: ImportedAttachment[];
}

export interface ImportedTicket {
  sourceId: string;
  subject: string;
  status: TicketStatus;
  /** null: the account's default priority. */
  priority: Priority | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  resolvedAt: Timestamp | null;
  closedAt: Timestamp | null;
  tags: string[];
  /** The requester: a contact (or an agent) of the source, and the e-mail address it had, when the source gives it. */
  requester: { sourceId: string | null; email: string | null };
  assigneeSourceId: string | null;
  teamSourceId: string | null;
  organizationSourceId: string | null;
  /** Keyed by the source field's title made a key (customFieldKey). */
  customFields: Record<string, string | number | boolean | null>;
  /** In the source's order, oldest first; the first is the ticket's description. */
  messages: ImportedMessage[];
}

export type ImportRecord =
  | { type: 'agents'; agent: ImportedAgent }
  | { type: 'teams'; team: ImportedTeam }
  | { type: 'organizations'; organization: ImportedOrganization }
  | { type: 'contacts'; contact: ImportedContact }
  | { type: 'tickets'; ticket: ImportedTicket };

/** A row of the job's errors (GET /api/imports/{import}/errors). */
export interface ImportErrorRow {
  type: ImportType;
  sourceId: string;
  reason: string;
}

/** One page of a phase: what it holds, and where the next page starts (null: the phase is read to its end). */
export interface SourcePage {
  records: ImportRecord[];
  errors: ImportErrorRow[];
  /** Opaque to the engine; kept in the job's checkpoint, and given back to read the next page. */
  next: string | null;
  /** The phase's total, when the source states it (tickets: the job's progress total). */
  total?: number | undefined;
}

export interface PageOptions {
  since?: Timestamp | undefined;
  /** Called as each ticket of a ticket page is read (its conversation fetched): progress within a page. */
  onTicket?: (() => void) | undefined;
}

/**
 * A source: reads one page of a phase from a checkpoint (null: the phase's start). `since` limits the read to what
 * changed since then (the cutover pass). A source keeps no state between pages but what `next` carries, so a job
 * resumed in another process after a crash reads on from its checkpoint.
 */
export interface ImportSourceReader {
  readonly source: ImportSource;
  /** Where its attachments' bytes come from (lib/imports/attachments.ts); none: not copied. */
  readonly files?: AttachmentFiles;
  page(phase: ImportPhase, from: string | null, options: PageOptions): Promise<SourcePage>;
}

/** A source's field title made a key: lower case, each run of other characters `_`, at most 64 (decisions.md). */
export function customFieldKey(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
}
