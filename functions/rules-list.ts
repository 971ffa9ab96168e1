import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { parseRuleListQuery } from '#lib/rules/list-query.ts';
import { listRules } from '#lib/rules/resource.ts';

/** GET /api/rules: the account's rules by position then id, after a cursor. */
export const handler = httpHandler({ route: route('listRules') }, async (request, caller) => ({
  statusCode: 200,
  body: await listRules(caller.accountId, parseRuleListQuery(request.query)),
}));
