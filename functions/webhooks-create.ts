import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { SECRET_ANSWER_HEADERS } from '#lib/http/response.ts';
import { createWebhookEndpoint } from '#lib/webhooks/endpoints.ts';
import { presentEndpointWithSecret } from '#lib/webhooks/present.ts';
import type { Endpoint } from '#lib/webhooks/types.ts';

/** POST /api/webhooks: registers an endpoint; the answer is the only one that shows its first secret. */
export const handler = httpHandler(
  { route: route('createWebhook'), body: true, present: created },
  (request, caller) => createWebhookEndpoint(caller.accountId, request.body, request.attach),
);

function created(endpoint: Endpoint): HttpResult {
  return {
    statusCode: 201,
    body: { data: presentEndpointWithSecret(endpoint) },
    headers: SECRET_ANSWER_HEADERS,
  };
}
