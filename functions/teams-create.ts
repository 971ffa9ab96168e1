import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { createTeam } from '#lib/people/teams.ts';

/** POST /api/teams: a new team (its name free in the account), with its agents. */
export const handler = httpHandler(
  { route: route('createTeam'), body: true, present: versionedAnswer(201) },
  (request, caller) => createTeam(caller.accountId, request.body, request.attach),
);
