import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { redeliverWebhookEvents } from '#lib/webhooks/deliveries.ts';
import { getWebhookEndpoint } from '#lib/webhooks/endpoints.ts';

/** POST /api/webhooks/{webhook}/redeliver: sends one event, or every event since a time, again. */
export const handler = httpHandler(
  {
    route: route('redeliverWebhook'),
    body: true,
    pathObject: (caller, { webhook }) => getWebhookEndpoint(caller.accountId, webhook ?? ''),
  },
  async (request, caller) => {
    const { count, message } = await redeliverWebhookEvents(
      caller.accountId,
      request.params.webhook ?? '',
      request.body,
    );
    return { statusCode: 202, body: { message, count } };
  },
);
