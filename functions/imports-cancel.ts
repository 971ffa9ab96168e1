import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { cancelImport, findImport } from '#lib/imports/jobs.ts';

/** POST /api/imports/{import}/cancel: the import stops at its next checkpoint (what is in stays). */
export const handler = httpHandler(
  {
    route: route('cancelImport'),
    pathObject: (caller, { import: id }) => findImport(caller.accountId, id ?? ''),
  },
  async (request, caller) => ({
    statusCode: 202,
    body: await cancelImport(caller.accountId, request.params.import ?? ''),
  }),
);
