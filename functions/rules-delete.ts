import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { CountedRule } from '#lib/rules/fired.ts';
import { deleteRule, findRule, showRule } from '#lib/rules/resource.ts';

/** DELETE /api/rules/{rule}: removed for good; If-Match as PATCH. */
export const handler = httpHandler(
  {
    route: route('deleteRule'),
    present: (rule: CountedRule) => ({ statusCode: 200, body: { data: showRule(rule) } }),
    pathObject: (caller, { rule }) => findRule(caller.accountId, rule ?? ''),
  },
  (request, caller) =>
    deleteRule(caller.accountId, request.params.rule ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
