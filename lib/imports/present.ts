import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { IMPORT_TYPES, type ImportErrorRow, type ImportType } from './records.ts';
import { emptyCounts, type TypeCounts } from './writing.ts';

/**
 * An Import as the API shows it (decisions.md, "Imports: moving a helpdesk in"): never its credentials, its lease or
 * its checkpoint's cursor. `counts` has every type, zeros for those the job has not met.
 */
export function presentImport(job: ImportJob) {
  const counts = {} as Record<ImportType, TypeCounts>;
  for (const type of IMPORT_TYPES) counts[type] = job.counts[type] ?? emptyCounts();
  return {
    id: job.id,
    source: job.source,
    mode: job.mode,
    status: job.status,
    phase: job.checkpoint.phase,
    progress: job.progress,
    counts,
    created_at: job.createdAt,
    started_at: job.startedAt,
    completed_at: job.completedAt,
    failure: job.failure,
  };
}

export type PresentedImport = ReturnType<typeof presentImport>;

export const presentErrorRow = (row: ImportErrorRow) => ({
  type: row.type,
  source_id: row.sourceId,
  reason: row.reason,
});
