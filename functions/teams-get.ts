import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { getTeam } from '#lib/people/teams.ts';

/** GET /api/teams/{team}: one team, its agents and its ETag. */
export const handler = httpHandler(
  { route: route('getTeam'), present: versionedAnswer(200) },
  (request, caller) => getTeam(caller.accountId, request.params.team ?? ''),
);
