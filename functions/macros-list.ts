import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { parseMacroListQuery } from '#lib/rules/list-query.ts';
import { listMacros } from '#lib/rules/macro-resource.ts';

/** GET /api/macros: the account's macros by id, after a cursor. */
export const handler = httpHandler({ route: route('listMacros') }, async (request, caller) => ({
  statusCode: 200,
  body: await listMacros(caller.accountId, parseMacroListQuery(request.query)),
}));
