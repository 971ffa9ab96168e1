import { writePeople } from './people.ts';
import type { ImportRecord } from './records.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/** A writer of a page's records of its types (lib/imports/writing.ts is the contract). */
export type PageWriter = (ctx: ImportContext, records: ImportRecord[]) => Promise<PageWritten>;

/** Who writes what: people (agents, teams, organizations, contacts), and tickets with their messages. */
export interface ImportWriters {
  people: PageWriter;
  tickets: PageWriter;
}

/** Until lib/imports/tickets.ts is merged (i42-tickets): a step of the ticket phase fails and is tried again. */
const ticketsNotYet: PageWriter = async () => {
  throw new Error('the ticket writer (lib/imports/tickets.ts) is not merged yet');
};

/** The writers the engine uses unless a caller gives its own. */
export const IMPORT_WRITERS: ImportWriters = {
  people: (ctx, records) => writePeople(ctx, records),
  tickets: ticketsNotYet,
};
