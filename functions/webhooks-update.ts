import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { getWebhookEndpoint, updateWebhookEndpoint } from '#lib/webhooks/endpoints.ts';
import { presentEndpoint } from '#lib/webhooks/present.ts';
import type { Endpoint } from '#lib/webhooks/types.ts';

/** PATCH /api/webhooks/{webhook}: changes url, events, description or enabled (enabling clears disabled_reason). */
export const handler = httpHandler(
  {
    route: route('updateWebhook'),
    body: true,
    present: updated,
    pathObject: (caller, { webhook }) => getWebhookEndpoint(caller.accountId, webhook ?? ''),
  },
  (request, caller) =>
    updateWebhookEndpoint(caller.accountId, request.params.webhook ?? '', request.body, request.attach),
);

function updated(endpoint: Endpoint): HttpResult {
  return { statusCode: 200, body: { message: 'Webhook endpoint updated.', data: presentEndpoint(endpoint) } };
}
