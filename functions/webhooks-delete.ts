import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { deleteWebhookEndpoint, getWebhookEndpoint } from '#lib/webhooks/endpoints.ts';

/** DELETE /api/webhooks/{webhook}: the endpoint gets no more deliveries. */
export const handler = httpHandler(
  {
    route: route('deleteWebhook'),
    present: deleted,
    pathObject: (caller, { webhook }) => getWebhookEndpoint(caller.accountId, webhook ?? ''),
  },
  (request, caller) => deleteWebhookEndpoint(caller.accountId, request.params.webhook ?? '', request.attach),
);

function deleted(): HttpResult {
  return { statusCode: 200, body: { message: 'Webhook endpoint deleted.' } };
}
