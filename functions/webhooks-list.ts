import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listWebhookEndpoints } from '#lib/webhooks/endpoints.ts';
import { presentEndpoint } from '#lib/webhooks/present.ts';

/** GET /api/webhooks: the account's endpoints (at most 20), oldest first. */
export const handler = httpHandler({ route: route('listWebhooks') }, async (_request, caller) => ({
  statusCode: 200,
  body: { data: (await listWebhookEndpoints(caller.accountId)).map(presentEndpoint) },
}));
