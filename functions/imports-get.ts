import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { showImport } from '#lib/imports/jobs.ts';

/** GET /api/imports/{import}: an import's status, phase, progress and counts (never its credentials). */
export const handler = httpHandler({ route: route('getImport') }, async (request, caller) => ({
  statusCode: 200,
  body: await showImport(caller.accountId, request.params.import ?? ''),
}));
