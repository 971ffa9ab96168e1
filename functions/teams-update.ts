import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { findTeam, updateTeam } from '#lib/people/teams.ts';

/** PATCH /api/teams/{team}: its name, its agents; If-Match refuses a lost update. */
export const handler = httpHandler(
  {
    route: route('updateTeam'),
    body: true,
    present: versionedAnswer(200),
    pathObject: (caller, { team }) => findTeam(caller.accountId, team ?? ''),
  },
  (request, caller) =>
    updateTeam(caller.accountId, request.params.team ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
