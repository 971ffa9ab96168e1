import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { CountedRule } from '#lib/rules/fired.ts';
import { createRule, showRule } from '#lib/rules/resource.ts';

/** POST /api/rules: a new rule, checked against the account, last by default. */
export const handler = httpHandler(
  {
    route: route('createRule'),
    body: true,
    present: (rule: CountedRule) => ({ statusCode: 201, body: { data: showRule(rule) } }),
  },
  (request, caller) => createRule(caller.accountId, request.body, request.attach),
);
