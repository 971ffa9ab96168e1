import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { createMacro } from '#lib/rules/macro-resource.ts';
import { presentMacro } from '#lib/rules/present.ts';
import type { Macro } from '#lib/rules/types.ts';

/** POST /api/macros: a new macro, its actions checked as a rule's. */
export const handler = httpHandler(
  {
    route: route('createMacro'),
    body: true,
    present: (macro: Macro) => ({ statusCode: 201, body: { data: presentMacro(macro) } }),
  },
  (request, caller) => createMacro(caller.accountId, request.body, request.attach),
);
