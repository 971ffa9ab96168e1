import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { deleteTeam, findTeam } from '#lib/people/teams.ts';

/** DELETE /api/teams/{team}: its agents leave it; refused while a category routes to it or it has open tickets. */
export const handler = httpHandler(
  {
    route: route('deleteTeam'),
    present: versionedAnswer(200, { etag: false }),
    pathObject: (caller, { team }) => findTeam(caller.accountId, team ?? ''),
  },
  (request, caller) =>
    deleteTeam(caller.accountId, request.params.team ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
