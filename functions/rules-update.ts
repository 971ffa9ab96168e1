import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { CountedRule } from '#lib/rules/fired.ts';
import { findRule, showRule, updateRule } from '#lib/rules/resource.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** PATCH /api/rules/{rule}: the fields sent replace the rule's; If-Match refuses a lost update. */
export const handler = httpHandler(
  {
    route: route('updateRule'),
    body: true,
    present: (rule: CountedRule) => ({
      statusCode: 200,
      body: { data: showRule(rule) },
      headers: { ETag: etagOf(rule.version) },
    }),
    pathObject: (caller, { rule }) => findRule(caller.accountId, rule ?? ''),
  },
  (request, caller) =>
    updateRule(caller.accountId, request.params.rule ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
