import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listWebhookDeliveries, parseDeliveryListQuery } from '#lib/webhooks/deliveries.ts';
import { getWebhookEndpoint } from '#lib/webhooks/endpoints.ts';

/** GET /api/webhooks/{webhook}/deliveries: the endpoint's delivery attempts, newest first, paginated. */
export const handler = httpHandler(
  {
    route: route('listWebhookDeliveries'),
    pathObject: (caller, { webhook }) => getWebhookEndpoint(caller.accountId, webhook ?? ''),
  },
  async (request, caller) => ({
    statusCode: 200,
    body: await listWebhookDeliveries(
      caller.accountId,
      request.params.webhook ?? '',
      parseDeliveryListQuery(request.query),
      { baseUrl: request.baseUrl, path: request.resourcePath },
    ),
  }),
);
