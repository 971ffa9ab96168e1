import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { getRule, showRule } from '#lib/rules/resource.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** GET /api/rules/{rule}: one rule by id, with its ETag. */
export const handler = httpHandler({ route: route('getRule') }, async (request, caller) => {
  const rule = await getRule(caller.accountId, request.params.rule ?? '');
  return { statusCode: 200, body: { data: showRule(rule) }, headers: { ETag: etagOf(rule.version) } };
});
