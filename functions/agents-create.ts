import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { createAgent } from '#lib/people/agents.ts';

/** POST /api/agents: a new agent (its e-mail free in the account). */
export const handler = httpHandler(
  { route: route('createAgent'), body: true, present: versionedAnswer(201) },
  (request, caller) => createAgent(caller.accountId, request.body, request.attach),
);
