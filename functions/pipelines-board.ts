import { route } from '#functions/routes.ts';
import { pipelineBoard } from '#lib/deals/board.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/pipelines/{pipeline}/board: each stage's open deals, and the won and lost ones, per currency. */
export const handler = httpHandler({ route: route('getPipelineBoard') }, async (request, caller) => ({
  statusCode: 200,
  body: { data: await pipelineBoard(caller.accountId, request.params.pipeline ?? '') },
}));
