import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { getMacro } from '#lib/rules/macro-resource.ts';
import { presentMacro } from '#lib/rules/present.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** GET /api/macros/{macro}: one macro by id, with its ETag. */
export const handler = httpHandler({ route: route('getMacro') }, async (request, caller) => {
  const { entity, version } = await getMacro(caller.accountId, request.params.macro ?? '');
  return { statusCode: 200, body: { data: presentMacro(entity) }, headers: { ETag: etagOf(version) } };
});
