import { route } from '#functions/routes.ts';
import type { ImportJob } from '#lib/data/imports/jobs.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { findImport } from '#lib/imports/jobs.ts';
import { presentImport } from '#lib/imports/present.ts';
import { undoImport } from '#lib/imports/undo.ts';

/** POST /api/imports/{import}/undo: what the ended import created goes to the trash (202, `undoing`). */
export const handler = httpHandler(
  {
    route: route('undoImport'),
    present: (job: ImportJob) => ({ statusCode: 202, body: { data: presentImport(job) } }),
    pathObject: (caller, { import: id }) => findImport(caller.accountId, id ?? ''),
  },
  (request, caller) => undoImport(caller.accountId, request.params.import ?? '', request.attach),
);
