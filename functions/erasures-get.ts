import { route } from '#functions/routes.ts';
import { getErasure, presentErasure } from '#lib/erasures/erasures.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/erasures/{erasure}: an erasure's status and counts (never the address). */
export const handler = httpHandler({ route: route('getErasure') }, async (request, caller) => ({
  statusCode: 200,
  body: { data: presentErasure(await getErasure(caller.accountId, request.params.erasure ?? '')) },
}));
