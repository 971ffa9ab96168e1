/**
 * What the import engine hands the writers, and what they answer (issue 42; spec/decisions.md "Imports: moving a
 * helpdesk in"). The engine (lib/imports/engine.ts) reads a source's page and gives its records to the writer of
 * their type: people (lib/imports/people.ts: agents, teams, organizations, contacts) and tickets with their
 * messages and attachments (lib/imports/tickets.ts). A writer is keyed by the source's ids (lib/data/imports/
 * source-keys.ts): writing the same record again updates what changed or leaves it (`unchanged`), never duplicates,
 * even when two runs race or a run is retried after a crash; it writes silently (no mail, no rules, no assignment,
 * no breach of a past due time; every event carries `import_id`, and webhooks receive none of them).
 */
import type { AttachmentCopier } from './attachments.ts';
import type { ImportErrorRow, ImportSource, ImportType } from './records.ts';

/** The job a write belongs to. `validate`: decide every outcome and error row, write nothing. */
export interface ImportContext {
  accountId: string;
  importId: string;
  source: ImportSource;
  validate: boolean;
  /**
   * Copies the tickets' attachments into the account's mail store (sourceAttachmentCopier of the job's source client
   * and the mail store); absent (validate, a source without attachments): none copied, their counts still decided.
   */
  attachments?: AttachmentCopier | undefined;
  /**
   * Whether a run of this source copies attachments (its reader fetches files; the ndjson file's do not): a validate
   * run, which copies none, decides them as that run would. Absent: it does.
   */
  copiesFiles?: boolean | undefined;
  /**
   * The page's write mark (`<import id>:<page>`), kept on each source key the page claims or moves: a page written
   * again after a crash counts what its earlier attempt wrote as that attempt did (pageOutcome).
   */
  mark?: string | undefined;
  /** Called as each ticket of the page is written (or decided): progress within a page. */
  onTicket?: (() => void) | undefined;
}

/** What happened to one source record. */
export type ImportOutcome = 'created' | 'updated' | 'unchanged' | 'failed';

/** A type's counts in a job (Import.counts): `source` is how many records the source gave. */
export interface TypeCounts {
  source: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
}

/** What writing a page gave: counts by type (only the types it met), and its error rows. */
export interface PageWritten {
  counts: Partial<Record<ImportType, TypeCounts>>;
  errors: ImportErrorRow[];
}

export const emptyCounts = (): TypeCounts => ({ source: 0, created: 0, updated: 0, unchanged: 0, failed: 0 });

/** Adds `outcome` of one record of `type` to `written`. */
export function countOutcome(written: PageWritten, type: ImportType, outcome: ImportOutcome): void {
  const counts = written.counts[type] ?? emptyCounts();
  written.counts[type] = counts;
  counts.source++;
  counts[outcome]++;
}

/** Sums page counts into a job's. */
export function addCounts(
  into: Partial<Record<ImportType, TypeCounts>>,
  page: Partial<Record<ImportType, TypeCounts>>,
): Partial<Record<ImportType, TypeCounts>> {
  const out = { ...into };
  for (const [type, c] of Object.entries(page) as [ImportType, TypeCounts][]) {
    const was = out[type] ?? emptyCounts();
    out[type] = {
      source: was.source + c.source,
      created: was.created + c.created,
      updated: was.updated + c.updated,
      unchanged: was.unchanged + c.unchanged,
      failed: was.failed + c.failed,
    };
  }
  return out;
}
