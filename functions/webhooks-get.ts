import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { getWebhookEndpoint } from '#lib/webhooks/endpoints.ts';
import { presentEndpoint } from '#lib/webhooks/present.ts';

/** GET /api/webhooks/{webhook}: one endpoint, without its secrets. */
export const handler = httpHandler({ route: route('getWebhook') }, async (request, caller) => ({
  statusCode: 200,
  body: { data: presentEndpoint(await getWebhookEndpoint(caller.accountId, request.params.webhook ?? '')) },
}));
