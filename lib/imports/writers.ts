import { writePeople } from './people.ts';
import type { ImportRecord } from './records.ts';
import { writeTickets } from './tickets.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/** A writer of a page's records of its types (lib/imports/writing.ts is the contract). */
export type PageWriter = (ctx: ImportContext, records: ImportRecord[]) => Promise<PageWritten>;

/** Who writes what: people (agents, teams, organizations, contacts), and tickets with their messages. */
export interface ImportWriters {
  people: PageWriter;
  tickets: PageWriter;
}

/** The writers the engine uses unless a caller gives its own. */
export const IMPORT_WRITERS: ImportWriters = {
  people: (ctx, records) => writePeople(ctx, records),
  tickets: (ctx, records) => writeTickets(ctx, records),
};
