import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { cancelImport } from '#lib/imports/jobs.ts';

/** POST /api/imports/{import}/cancel: the import stops at its next checkpoint (what is in stays). */
export const handler = httpHandler({ route: route('cancelImport') }, async (request, caller) => ({
  statusCode: 202,
  body: await cancelImport(caller.accountId, request.params.import ?? ''),
}));
