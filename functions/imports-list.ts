import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listImports } from '#lib/imports/jobs.ts';

/** GET /api/imports: the account's imports, newest first. */
export const handler = httpHandler({ route: route('listImports') }, async (request, caller) => ({
  statusCode: 200,
  body: await listImports(caller.accountId, request.query),
}));
