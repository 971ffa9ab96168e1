import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { testRules } from '#lib/rules/test-rules.ts';

/** POST /api/rules/test: what the account's rules (or drafts) would do to a ticket's change; writes nothing. */
export const handler = httpHandler({ route: route('testRules'), body: true }, async (request, caller) => ({
  statusCode: 200,
  body: { data: await testRules(caller.accountId, request.body) },
}));
