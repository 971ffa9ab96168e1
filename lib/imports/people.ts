import { writeAgents } from './people-agents.ts';
import { writeContacts } from './people-contacts.ts';
import { writeOrganizations } from './people-organizations.ts';
import { writeTeams } from './people-teams.ts';
import type { ImportRecord } from './records.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/**
 * The people writer of the import engine (issue 42; docs/imports.md, "Writing people"): a page's agents, teams,
 * organizations and contacts, written in that order (the contract's: a team takes in the agents naming it, a contact
 * names its organization), each keyed by its source id (lib/data/imports/source-keys.ts) and written as the API
 * writes it, with `imported_from` and its events flagged with `import_id`. Each record's outcome is counted
 * (created, updated, unchanged, failed); a record that cannot be written is an error row, never a thrown error. A
 * store failure is thrown: the engine runs the page again, and the source keys make that safe. `ctx.validate`:
 * every outcome and error row decided, nothing written.
 */
export async function writePeople(
  ctx: ImportContext,
  records: readonly ImportRecord[],
): Promise<PageWritten> {
  const written: PageWritten = { counts: {}, errors: [] };
  const of = <T extends ImportRecord['type']>(type: T) =>
    records.filter((r): r is Extract<ImportRecord, { type: T }> => r.type === type);
  await writeAgents(
    ctx,
    of('agents').map((r) => r.agent),
    written,
  );
  await writeTeams(
    ctx,
    of('teams').map((r) => r.team),
    written,
  );
  await writeOrganizations(
    ctx,
    of('organizations').map((r) => r.organization),
    written,
  );
  await writeContacts(
    ctx,
    of('contacts').map((r) => r.contact),
    written,
  );
  // A record decided again (a lost race) may have noted the same row twice.
  const rows = new Map(written.errors.map((e) => [JSON.stringify([e.type, e.sourceId, e.reason]), e]));
  return { counts: written.counts, errors: [...rows.values()] };
}
