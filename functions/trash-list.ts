import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listTrashPage } from '#lib/trash/list.ts';

/** GET /api/trash: what was deleted and not yet purged, newest deletion first, with a cursor. */
export const handler = httpHandler({ route: route('listTrash') }, async (request, caller) => ({
  statusCode: 200,
  body: await listTrashPage(caller.accountId, request.query),
}));
