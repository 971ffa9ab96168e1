import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listActivePipelines } from '#lib/pipelines/list-pipelines.ts';

/** GET /api/pipelines: the active pipelines of the caller's account, with their stages. */
export const handler = httpHandler({ route: route('listPipelines') }, async (_request, caller) => ({
  statusCode: 200,
  body: { data: await listActivePipelines(caller.accountId) },
}));
