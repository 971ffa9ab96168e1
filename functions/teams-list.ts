import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { parseTeamListQuery } from '#lib/people/schemas.ts';
import { listTeams } from '#lib/people/teams.ts';

/** GET /api/teams: the account's teams by id, after a cursor. */
export const handler = httpHandler({ route: route('listTeams') }, async (request, caller) => ({
  statusCode: 200,
  body: await listTeams(caller.accountId, parseTeamListQuery(request.query)),
}));
