import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { deleteMacro, findMacro } from '#lib/rules/macro-resource.ts';
import { presentMacro } from '#lib/rules/present.ts';
import type { Macro } from '#lib/rules/types.ts';

/** DELETE /api/macros/{macro}: removed for good; If-Match as PATCH. */
export const handler = httpHandler(
  {
    route: route('deleteMacro'),
    present: (macro: Macro) => ({ statusCode: 200, body: { data: presentMacro(macro) } }),
    pathObject: (caller, { macro }) => findMacro(caller.accountId, macro ?? ''),
  },
  (request, caller) =>
    deleteMacro(caller.accountId, request.params.macro ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
