import * as v from 'valibot';
import type { Timestamp } from '#lib/time.ts';
import type { ImportErrorRow, ImportedMessage, ImportPhase, ImportRecord } from '../records.ts';
import { lineAttachment } from './ndjson-attachments.ts';
import { AgentLine, ContactLine, OrganizationLine, TeamLine, TicketLine } from './ndjson-schemas.ts';

/**
 * One line of deskpipe's import format (docs/import-format.md) to the record the engine takes, or to the error row
 * that says why it cannot be: pure, no reading. A bad line is never thrown: it is an error row naming its line
 * number and the field (`line 12: messages.1.created_at: …`), and the lines around it are read on.
 */

/** Each line type and the phase it is read in (a phase's name is also its records' and error rows' type). */
export const LINE_PHASES = {
  agent: 'agents',
  team: 'teams',
  organization: 'organizations',
  contact: 'contacts',
  ticket: 'tickets',
} as const satisfies Record<string, ImportPhase>;
type LineType = keyof typeof LINE_PHASES;

/**
 * The phase that reports a line whose type cannot be read (not JSON, no `type` or an unknown one, and not
 * recognisable from its first bytes): one phase, so that the line is one error row, not one a phase. Tickets:
 * the file's bulk, and the phase whose progress the job shows.
 */
export const UNTYPED_PHASE: ImportPhase = 'tickets';

/** A line as the reader found it: its bytes without the newline, or, past the limit, only its first bytes. */
export type RawLine =
  | { number: number; bytes: Uint8Array }
  | { number: number; head: Uint8Array; length: number; limit: number };

/** What a line gives a phase: a record, an error row, or nothing (another phase's line, a blank line). */
export type LineOutcome = { record: ImportRecord } | { error: ImportErrorRow } | null;

const SCHEMAS = {
  agent: AgentLine,
  team: TeamLine,
  organization: OrganizationLine,
  contact: ContactLine,
  ticket: TicketLine,
} as const;

const isLineType = (type: unknown): type is LineType =>
  typeof type === 'string' && Object.hasOwn(LINE_PHASES, type);

/** Reads one line for `phase`; `since`: tickets updated before it are left out (the cutover pass). */
export function mapLine(phase: ImportPhase, line: RawLine, since?: Timestamp): LineOutcome {
  const at = `line ${line.number}`;
  if ('head' in line) {
    return failed(phase, line.head, at, `longer than the limit of ${line.limit} bytes (${line.length})`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(line.bytes);
  } catch {
    return failed(phase, line.bytes, at, 'not UTF-8');
  }
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return failed(phase, line.bytes, at, `not JSON (${(error as Error).message})`);
  }
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof value !== 'object' || Array.isArray(value) || !isLineType(type)) {
    if (phase !== UNTYPED_PHASE) return null;
    const expected = Object.keys(LINE_PHASES).join(', ');
    return errorRow(phase, idOf(value) ?? at, `${at}: type: not one of ${expected}`);
  }
  if (LINE_PHASES[type] !== phase) return null;
  return mapObject(type, value, at, since);
}

function mapObject(type: LineType, value: unknown, at: string, since?: Timestamp): LineOutcome {
  const phase = LINE_PHASES[type];
  const parsed = v.safeParse(SCHEMAS[type], value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const field = issue.path?.map((item) => String(item.key)).join('.') ?? '';
    const message = issue.received === 'undefined' ? 'missing' : issue.message;
    return errorRow(phase, idOf(value) ?? at, `${at}: ${field ? `${field}: ` : ''}${message}`);
  }
  const line = parsed.output;
  switch (line.type) {
    case 'agent':
      return {
        record: {
          type: 'agents',
          agent: {
            sourceId: line.id,
            email: line.email,
            name: line.name,
            active: line.active,
            teamSourceIds: line.team_ids,
          },
        },
      };
    case 'team':
      return { record: { type: 'teams', team: { sourceId: line.id, name: line.name } } };
    case 'organization':
      return {
        record: {
          type: 'organizations',
          organization: { sourceId: line.id, name: line.name, domains: line.domains },
        },
      };
    case 'contact':
      return {
        record: {
          type: 'contacts',
          contact: {
            sourceId: line.id,
            email: line.email,
            name: line.name,
            phone: line.phone,
            organizationSourceId: line.organization_id,
          },
        },
      };
    case 'ticket':
      return ticketRecord(line, since);
  }
}

function ticketRecord(line: v.InferOutput<typeof TicketLine>, since?: Timestamp): LineOutcome {
  const messages: ImportedMessage[] = line.messages.map((m) => ({
    sourceId: m.id,
    author: m.author
      ? { kind: m.author.type, sourceId: m.author.id }
      : { kind: 'unknown' as const, sourceId: null },
    body: m.body,
    internal: m.internal,
    createdAt: m.created_at,
    messageId: m.message_id,
    attachments: m.attachments.map(lineAttachment),
  }));
  // Not given: the latest time the line knows (its creation or its last message). Timestamps compare as strings.
  const updatedAt =
    line.updated_at ??
    messages.reduce((latest, m) => (m.createdAt > latest ? m.createdAt : latest), line.created_at);
  if (since !== undefined && updatedAt < since) return null;
  return {
    record: {
      type: 'tickets',
      ticket: {
        sourceId: line.id,
        subject: line.subject,
        status: line.status,
        priority: line.priority,
        createdAt: line.created_at,
        updatedAt,
        resolvedAt: line.resolved_at,
        closedAt: line.closed_at,
        tags: line.tags,
        requester: { sourceId: line.requester.id, email: line.requester.email },
        assigneeSourceId: line.assignee_id,
        teamSourceId: line.team_id,
        organizationSourceId: line.organization_id,
        customFields: line.custom_fields,
        messages,
      },
    },
  };
}

/**
 * A line that could not be read as JSON: reported in the phase of the type its first bytes name when they begin
 * `{"type": "…"` (the order docs/import-format.md asks for), else in UNTYPED_PHASE; with the id that follows, if any.
 */
function failed(phase: ImportPhase, bytes: Uint8Array, at: string, why: string): LineOutcome {
  const head = new TextDecoder().decode(bytes.subarray(0, 512));
  const sniffed = /^\s*\{\s*"type"\s*:\s*"([a-z]+)"\s*(?:,\s*"id"\s*:\s*"([^"\\]{1,255})")?/.exec(head);
  const type = sniffed?.[1];
  const owner = isLineType(type) ? LINE_PHASES[type] : UNTYPED_PHASE;
  if (owner !== phase) return null;
  return errorRow(phase, sniffed?.[2] ?? at, `${at}: ${why}`);
}

function idOf(value: unknown): string | undefined {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' && id.trim() !== '' && id.length <= 255 ? id.trim() : undefined;
}

const errorRow = (type: ImportPhase, sourceId: string, reason: string): LineOutcome => ({
  error: { type, sourceId, reason },
});
