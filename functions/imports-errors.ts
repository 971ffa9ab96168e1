import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { findImport, listImportErrors } from '#lib/imports/jobs.ts';

/** GET /api/imports/{import}/errors: the rows of what could not be imported, in the order found. */
export const handler = httpHandler(
  {
    route: route('listImportErrors'),
    pathObject: (caller, { import: id }) => findImport(caller.accountId, id ?? ''),
  },
  async (request, caller) => ({
    statusCode: 200,
    body: await listImportErrors(caller.accountId, request.params.import ?? '', request.query),
  }),
);
