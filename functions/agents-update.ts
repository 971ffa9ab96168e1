import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { versionedAnswer } from '#lib/http/versioned-answer.ts';
import { findAgent, updateAgent } from '#lib/people/agents.ts';

/** PATCH /api/agents/{agent}: the fields sent; If-Match refuses a lost update. */
export const handler = httpHandler(
  {
    route: route('updateAgent'),
    body: true,
    present: versionedAnswer(200),
    pathObject: (caller, { agent }) => findAgent(caller.accountId, agent ?? ''),
  },
  (request, caller) =>
    updateAgent(caller.accountId, request.params.agent ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
