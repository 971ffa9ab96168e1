import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { getAgent } from '#lib/people/agents.ts';

/** GET /api/agents/{agent}: one agent, its open tickets and its ETag. */
export const handler = httpHandler(
  { route: route('getAgent'), present: versionedAnswer(200) },
  (request, caller) => getAgent(caller.accountId, request.params.agent ?? ''),
);
