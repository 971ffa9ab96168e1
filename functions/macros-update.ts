import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { findMacro, updateMacro } from '#lib/rules/macro-resource.ts';
import { presentMacro } from '#lib/rules/present.ts';
import type { Macro } from '#lib/rules/types.ts';
import { etagOf, type Versioned } from '#lib/versioned-update.ts';

/** PATCH /api/macros/{macro}: `name`, `actions` (replaced); If-Match refuses a lost update. */
export const handler = httpHandler(
  {
    route: route('updateMacro'),
    body: true,
    present: ({ entity, version }: Versioned<Macro>) => ({
      statusCode: 200,
      body: { data: presentMacro(entity) },
      headers: { ETag: etagOf(version) },
    }),
    pathObject: (caller, { macro }) => findMacro(caller.accountId, macro ?? ''),
  },
  (request, caller) =>
    updateMacro(caller.accountId, request.params.macro ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
