import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listAgents } from '#lib/people/agents.ts';
import { parseAgentListQuery } from '#lib/people/schemas.ts';

/** GET /api/agents: the account's agents by id, after a cursor, filtered by team, active and status. */
export const handler = httpHandler({ route: route('listAgents') }, async (request, caller) => ({
  statusCode: 200,
  body: await listAgents(caller.accountId, parseAgentListQuery(request.query)),
}));
